//! The workspace root and path confinement (stub).

use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    pub fn new(root: PathBuf) -> std::io::Result<Self> {
        Ok(Workspace {
            root: root.canonicalize()?,
        })
    }

    pub fn root(&self) -> &std::path::Path {
        &self.root
    }
}
