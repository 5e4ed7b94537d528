//! Man pages and shell completions, generated from the clap definitions in
//! [`crate::cli`] so they never drift from the flags. `cargo run --bin
//! chatfsck-mangen` writes them into `man/` and `completions/`; a test
//! fails when the committed files are stale.

use std::path::PathBuf;

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;

/// The command to run when the committed files are stale.
pub const REGENERATE: &str = "cargo run --bin chatfsck-mangen";

/// The directories the generated files live in (relative to the crate root).
pub const DIRS: [&str; 2] = ["man", "completions"];

/// Every generated file: its path relative to the crate root and contents.
pub fn files() -> std::io::Result<Vec<(PathBuf, Vec<u8>)>> {
    let mut out = Vec::new();
    let mut cmd = Cli::command().disable_help_subcommand(true);
    cmd.build();
    man_pages(&cmd, &mut out)?;
    for (shell, name) in [
        (Shell::Bash, "chatfsck.bash"),
        (Shell::Zsh, "_chatfsck"),
        (Shell::Fish, "chatfsck.fish"),
    ] {
        let mut buf = Vec::new();
        clap_complete::generate(shell, &mut Cli::command(), "chatfsck", &mut buf);
        out.push((PathBuf::from("completions").join(name), buf));
    }
    Ok(out)
}

/// `chatfsck.1`, then one page per (visible) subcommand, recursively:
/// `chatfsck-lint.1`, …
fn man_pages(cmd: &clap::Command, out: &mut Vec<(PathBuf, Vec<u8>)>) -> std::io::Result<()> {
    let man = clap_mangen::Man::new(cmd.clone());
    let mut buf = Vec::new();
    man.render(&mut buf)?;
    out.push((PathBuf::from("man").join(man.get_filename()), buf));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        man_pages(sub, out)?;
    }
    Ok(())
}
