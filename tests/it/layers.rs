//! The module layers DESIGN.md describes, checked: a module of `src/` may name (`crate::x`)
//! only modules of lower layers. An import upward is a cycle in the making: it is how `tools`
//! once needed `agent`, and `model` the terminal.

use std::collections::BTreeMap;
use std::path::Path;

/// Lowest first. Modules on one line are one layer and must not import each other.
const LAYERS: &[&[&str]] = &[
    &["text", "paths"],
    &["model"],
    &["term", "sandbox"],
    &["process"],
    &["tools", "checkpoint"],
    &["skills", "session", "trust"],
    &["events", "agents"],
    &["hooks", "context", "mcp", "commands", "notify"],
    &["config"],
    &["agent"],
    &["app"],
    &["chat", "acp"],
    &["cli"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Every `crate::NAME` that the sources at `path` (a file, or a folder of them) name, with the
/// file naming it, under `module`.
fn imports(path: &Path, module: &str, out: &mut BTreeMap<String, Vec<(String, String)>>) {
    if path.is_dir() {
        for e in std::fs::read_dir(path).expect("read src").flatten() {
            imports(&e.path(), module, out);
        }
        return;
    }
    if path.extension().is_none_or(|x| x != "rs") {
        return;
    }
    let text = std::fs::read_to_string(path).expect("read source");
    for (i, _) in text.match_indices("crate::") {
        let name: String = text[i + "crate::".len()..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        out.entry(module.to_string())
            .or_default()
            .push((name, path.display().to_string()));
    }
}

#[test]
fn every_module_imports_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = BTreeMap::new();
    for e in std::fs::read_dir(&src).expect("src").flatten() {
        let path = e.path();
        let name = path
            .file_stem()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        if name == "lib" || name == "main" || name == "pod_main" {
            continue;
        }
        assert!(
            layer_of(&name).is_some(),
            "src/{name} is in no layer: add it to LAYERS here and to DESIGN.md"
        );
        imports(&path, &name, &mut all);
    }
    let mut wrong = Vec::new();
    for (module, names) in &all {
        let own = layer_of(module).expect("checked above");
        for (name, file) in names {
            if name == module {
                continue;
            }
            match layer_of(name) {
                Some(l) if l < own => {}
                Some(_) => wrong.push(format!("{file}: {module} imports crate::{name}")),
                None => wrong.push(format!("{file}: crate::{name} is in no layer")),
            }
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "imports against the layers:\n{}",
        wrong.join("\n")
    );
}
