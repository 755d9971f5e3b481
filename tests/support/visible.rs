//! Files of the checkout where a sandboxed command can see them. The pod gives commands a
//! `/tmp` of the run's own, so a checkout under the host's `/tmp` (a CI clone there) has its
//! test programs (the MCP test server, the npm reference servers, the repro scripts) hidden
//! from the commands and servers that run them. Those are copied once per test process into a
//! folder outside `/tmp`; anywhere else the path is used as it is.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

/// `path`, or its copy outside `/tmp` when it lies under it.
pub fn outside_pods_tmp(path: &Path) -> PathBuf {
    let real = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let tmp = Path::new("/tmp")
        .canonicalize()
        .unwrap_or_else(|_| PathBuf::from("/tmp"));
    if !real.starts_with(&tmp) {
        return path.to_path_buf();
    }
    static COPIES: OnceLock<Mutex<HashMap<PathBuf, PathBuf>>> = OnceLock::new();
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let mut copies = COPIES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(copy) = copies.get(&real) {
        return copy.clone();
    }
    let dir = DIR.get_or_init(|| {
        // Kept for the test process's life: tests of it run the copies until it ends.
        let d = tempfile::Builder::new()
            .prefix("hx-visible-")
            .tempdir_in(super::outside_tmp())
            .expect("a folder outside /tmp");
        d.keep()
    });
    let dest = dir.join(format!("{}", copies.len())).join(
        real.file_name()
            .unwrap_or_else(|| std::ffi::OsStr::new("copy")),
    );
    std::fs::create_dir_all(dest.parent().expect("a parent")).expect("mkdir");
    let status = std::process::Command::new("cp")
        .arg("-a")
        .arg(&real)
        .arg(&dest)
        .status()
        .expect("cp");
    assert!(
        status.success(),
        "cp -a {} {}",
        real.display(),
        dest.display()
    );
    copies.insert(real, dest.clone());
    dest
}
