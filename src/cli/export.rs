//! `hx sessions export ID --format atif|markdown|jsonl [-o FILE]`: one session written out for
//! another program or another person. Nothing is uploaded: the document goes to stdout or to
//! FILE.

use std::io::Read as _;
use std::path::Path;

use super::{exit, ExportFormat};
use crate::session::record;
use crate::session::Store;
use crate::text::Warning;

mod atif;
mod markdown;
mod timeline;

#[cfg(test)]
mod tests;

/// The session `id` names (found as `hx sessions show` finds it) in `format`, to `output` or
/// stdout.
pub(super) fn export(
    root: &Path,
    store: &Store,
    id: &str,
    format: ExportFormat,
    output: Option<&Path>,
) -> i32 {
    let path = match crate::app::session::locate(root, store, id) {
        Ok(p) => p,
        Err(f) => return super::show_failure(f),
    };
    // Found in another workspace: its subagents are there too.
    let home = path.parent().map(Store::at);
    let store = home.as_ref().unwrap_or(store);
    let made = match format {
        ExportFormat::Jsonl => jsonl(&path),
        ExportFormat::Atif => timeline::load(store, &path).map(|t| {
            // serde escapes C0 controls; the rest a terminal would obey are escaped too, which
            // leaves the JSON's value as it is.
            let text = atif::document(&t);
            (
                crate::events::json::safe_json(&text).into_owned(),
                t.warnings,
            )
        }),
        ExportFormat::Markdown => timeline::load(store, &path).map(|t| {
            let text = markdown::document(&t);
            (crate::text::escape_controls(&text).into_owned(), t.warnings)
        }),
    };
    let (text, warnings) = match made {
        Ok(m) => m,
        Err(e) => return super::fail(exit::FAILED, format!("{}: {e}", path.display())),
    };
    for w in &warnings {
        errln!("{}", Warning::new(w));
    }
    match output {
        None => {
            super::out_text(&text);
            exit::ANSWERED
        }
        Some(file) => match crate::paths::write_atomic(file, text.as_bytes()) {
            Ok(()) => exit::ANSWERED,
            Err(e) => super::fail(
                exit::FAILED,
                format!("cannot write {}: {e}", file.display()),
            ),
        },
    }
}

/// The file's complete lines as they are, once the whole file reads as a session: a torn
/// last line (a crash mid-write) is left out, with the reader's warning.
fn jsonl(path: &Path) -> Result<(String, Vec<String>), String> {
    let loaded = record::read(path).map_err(|e| e.to_string())?;
    let file = crate::paths::open_regular(path).map_err(|e| format!("cannot open: {e}"))?;
    // Only what was read: a run still appending adds lines after it.
    let mut bytes = Vec::new();
    file.take(loaded.valid_len)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read: {e}"))?;
    // Every line was parsed as JSON, which is UTF-8.
    let text = String::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())?;
    Ok((text, loaded.warnings))
}
