//! Writes the man pages (man/) and shell completions (completions/) from the
//! clap definitions: `cargo run --bin chatfsck-mangen [DIR]`, where DIR is
//! the crate root (the default). Files that no longer correspond to a
//! command are removed, so a renamed subcommand leaves no stale page.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let root = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    match write(&root) {
        Ok(n) => {
            println!("wrote {n} files under {}", root.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

fn write(root: &std::path::Path) -> Result<usize, String> {
    let files = chatfsck::docgen::files().map_err(|e| e.to_string())?;
    for dir in chatfsck::docgen::DIRS {
        let dir = root.join(dir);
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in std::fs::read_dir(&dir).map_err(|e| format!("{}: {e}", dir.display()))? {
            let path = entry.map_err(|e| e.to_string())?.path();
            let rel = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
            if path.is_file() && !files.iter().any(|(p, _)| *p == rel) {
                std::fs::remove_file(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
    }
    for (rel, bytes) in &files {
        let path = root.join(rel);
        std::fs::write(&path, bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(files.len())
}
