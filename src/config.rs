//! `chatfsck.toml`: project settings, so CI and people run the same checks.
//!
//! ```toml
//! select = ["orphan-tool-call", "corrupt-record"]   # run only these rules
//! ignore = ["role-order"]                           # never run these
//! fail-on = "warning"                               # error | warning | info
//! skip-unreadable = true   # files a directory walk cannot read: listed, not exit 2
//!
//! [repair]
//! orphan-calls = "placeholder"   # placeholder | drop | report
//! synthesize = true              # false: never invent content
//! ```
//!
//! The file is found by searching from the current directory upwards, or
//! named with `--config FILE`. Command-line flags override it. Unknown keys
//! and unknown rule names are errors that name the file.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::Error;
use crate::finding::Severity;

/// The file name searched for.
pub const FILE_NAME: &str = "chatfsck.toml";

pub use crate::write::policy::{OrphanCalls, RepairPolicy};

/// The `[repair]` table as written (unset values are `None`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RepairConfig {
    pub orphan_calls: Option<OrphanCalls>,
    pub synthesize: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct File {
    select: Option<Vec<String>>,
    ignore: Option<Vec<String>>,
    fail_on: Option<Severity>,
    skip_unreadable: Option<bool>,
    #[serde(default)]
    repair: RepairConfig,
}

/// Settings from a configuration file (or the defaults when there is none).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Config {
    /// The file the settings came from; `None` when no file was found.
    pub path: Option<PathBuf>,
    /// Rules to run (`None`: all).
    pub select: Option<Vec<String>>,
    /// Rules never to run.
    pub ignore: Option<Vec<String>>,
    /// The lowest severity that makes `lint` exit 1.
    pub fail_on: Option<Severity>,
    /// Whether files a directory walk found and could not read let `lint`
    /// exit 0 or 1 (they are listed either way).
    pub skip_unreadable: Option<bool>,
    /// The `[repair]` table as written (validated at load).
    pub repair: RepairConfig,
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.chars().rev().take_while(|&c| c != '\n').count() + 1;
    (line, col)
}

impl Config {
    /// Parse and validate the text of a configuration file; `path` is only
    /// used to name the file in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Config, Error> {
        let file: File = toml::from_str(text).map_err(|e| {
            let msg = e.message().trim().replace('\n', "; ");
            let cause = match e.span() {
                Some(span) => {
                    let (line, col) = line_col(text, span.start);
                    format!("line {line}, column {col}: {msg}")
                }
                None => msg,
            };
            Error::config(path, cause)
        })?;
        for (key, names) in [("select", &file.select), ("ignore", &file.ignore)] {
            for name in names.iter().flatten() {
                if crate::rules::find(name).is_none() {
                    return Err(Error::config(
                        path,
                        format!(
                            "unknown rule `{name}` in `{key}` (run `chatfsck rules` for the list)"
                        ),
                    ));
                }
            }
        }
        // A contradictory [repair] table is an error now, not at repair time.
        RepairPolicy::resolve(file.repair.orphan_calls, file.repair.synthesize)
            .map_err(|e| Error::config(path, format!("[repair]: {e}")))?;
        Ok(Config {
            path: Some(path.to_path_buf()),
            select: file.select,
            ignore: file.ignore,
            fail_on: file.fail_on,
            skip_unreadable: file.skip_unreadable,
            repair: file.repair,
        })
    }

    /// Read and validate one file.
    pub fn read(path: &Path) -> Result<Config, Error> {
        // A FIFO would block the read forever, a device never end.
        if let Ok(meta) = std::fs::metadata(path)
            && !meta.is_file()
        {
            return Err(Error::config(path, "not a regular file"));
        }
        let bytes = std::fs::read(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::config(path, "no such file"),
            _ => Error::config(path, crate::error::io_cause(&e)),
        })?;
        let text = String::from_utf8(bytes)
            .map_err(|_| Error::config(path, "not valid UTF-8 (TOML files are UTF-8)"))?;
        Config::parse(&text, path)
    }

    /// The nearest `chatfsck.toml` in `dir` or one of its ancestors.
    pub fn discover(dir: &Path) -> Option<PathBuf> {
        dir.ancestors()
            .map(|d| d.join(FILE_NAME))
            .find(|p| p.is_file())
    }

    /// The configuration in force: the file named by `--config`, else the
    /// nearest `chatfsck.toml` above the current directory, else defaults.
    pub fn load(explicit: Option<&Path>) -> Result<Config, Error> {
        if let Some(p) = explicit {
            return Config::read(p);
        }
        let found = std::env::current_dir()
            .ok()
            .and_then(|d| Config::discover(&d));
        match found {
            Some(p) => Config::read(&p),
            None => Ok(Config::default()),
        }
    }

    /// The rules to run: `--select`/`--ignore` when given, else the file's,
    /// checked against the catalogue.
    pub fn selection(
        &self,
        select: Vec<String>,
        ignore: Vec<String>,
    ) -> Result<crate::rules::Selection, Error> {
        let pick = |flag: Vec<String>, file: &Option<Vec<String>>| {
            if flag.is_empty() {
                file.clone().unwrap_or_default()
            } else {
                flag
            }
        };
        let selection = crate::rules::Selection {
            select: pick(select, &self.select),
            ignore: pick(ignore, &self.ignore),
        };
        selection.validate().map_err(Error::Usage)?;
        Ok(selection)
    }

    /// The repair policy with command-line flags applied over the file.
    pub fn repair_policy_with(
        &self,
        orphan_calls: Option<OrphanCalls>,
        synthesize: Option<bool>,
    ) -> Result<RepairPolicy, Error> {
        RepairPolicy::resolve(
            orphan_calls.or(self.repair.orphan_calls),
            synthesize.or(self.repair.synthesize),
        )
        .map_err(|e| match &self.path {
            Some(p) => Error::config(p, format!("with the command-line flags: {e}")),
            None => Error::Usage(e),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, String> {
        Config::parse(text, Path::new("proj/chatfsck.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn a_full_file() {
        let c = parse(
            r#"
select = ["orphan-tool-call", "corrupt-record"]
ignore = ["role-order"]
fail-on = "warning"

[repair]
orphan-calls = "drop"
synthesize = false
"#,
        )
        .unwrap();
        assert_eq!(
            c.select.as_deref(),
            Some(&["orphan-tool-call".to_string(), "corrupt-record".to_string()][..])
        );
        assert_eq!(c.ignore.as_deref(), Some(&["role-order".to_string()][..]));
        assert_eq!(c.fail_on, Some(Severity::Warning));
        assert_eq!(
            c.repair_policy_with(None, None).unwrap(),
            RepairPolicy {
                orphan_calls: OrphanCalls::Drop,
                synthesize: false
            }
        );
    }

    #[test]
    fn an_empty_file_is_the_defaults() {
        let c = parse("").unwrap();
        assert_eq!(c.select, None);
        assert_eq!(c.fail_on, None);
        assert_eq!(
            c.repair_policy_with(None, None).unwrap(),
            RepairPolicy::default()
        );
        assert_eq!(c.path.as_deref(), Some(Path::new("proj/chatfsck.toml")));
    }

    #[test]
    fn every_orphan_calls_value() {
        for (v, want) in [
            ("placeholder", OrphanCalls::Placeholder),
            ("drop", OrphanCalls::Drop),
            ("report", OrphanCalls::Report),
        ] {
            let c = parse(&format!("[repair]\norphan-calls = \"{v}\"\n")).unwrap();
            assert_eq!(c.repair_policy_with(None, None).unwrap().orphan_calls, want);
            assert!(c.repair_policy_with(None, None).unwrap().synthesize);
        }
    }

    #[test]
    fn no_synthesis_defaults_to_reporting_orphans() {
        let c = parse("[repair]\nsynthesize = false\n").unwrap();
        assert_eq!(
            c.repair_policy_with(None, None).unwrap().orphan_calls,
            OrphanCalls::Report
        );
    }

    #[test]
    fn errors_name_the_file_and_the_place() {
        let e = parse("selct = []\n").unwrap_err();
        assert!(
            e.starts_with("proj/chatfsck.toml: line 1, column 1: unknown field `selct`"),
            "{e}"
        );
        let e = parse("[repair]\norphan-calls = \"keep\"\n").unwrap_err();
        assert!(
            e.starts_with("proj/chatfsck.toml: line 2, column 16: unknown variant `keep`"),
            "{e}"
        );
        let e = parse("[repair]\nsynthesise = true\n").unwrap_err();
        assert!(
            e.contains("line 2") && e.contains("unknown field `synthesise`"),
            "{e}"
        );
        let e = parse("ignore = [\"no-such-rule\"]\n").unwrap_err();
        assert_eq!(
            e,
            "proj/chatfsck.toml: unknown rule `no-such-rule` in `ignore` (run `chatfsck rules` for the list)"
        );
        let e = parse("fail-on = \"fatal\"\n").unwrap_err();
        assert!(e.contains("unknown variant `fatal`"), "{e}");
        let e = parse("select = \"orphan-tool-call\"\n").unwrap_err();
        assert!(e.contains("line 1"), "{e}");
        let e =
            parse("[repair]\norphan-calls = \"placeholder\"\nsynthesize = false\n").unwrap_err();
        assert!(e.contains("[repair]") && e.contains("forbids"), "{e}");
        let e = parse("select = [\n").unwrap_err();
        assert!(!e.contains('\n'), "one line: {e}");
        for e in [parse("a = 1\n").unwrap_err(), parse("x = [\n").unwrap_err()] {
            assert_eq!(e.lines().count(), 1, "{e}");
        }
    }

    #[test]
    fn flags_override_the_file() {
        let c = parse("[repair]\norphan-calls = \"drop\"\n").unwrap();
        let p = c
            .repair_policy_with(Some(OrphanCalls::Report), None)
            .unwrap();
        assert_eq!(p.orphan_calls, OrphanCalls::Report);
        let p = c.repair_policy_with(None, Some(false)).unwrap();
        assert_eq!(p.orphan_calls, OrphanCalls::Drop);
        assert!(!p.synthesize);
        let c = parse("[repair]\norphan-calls = \"placeholder\"\n").unwrap();
        let e = c
            .repair_policy_with(None, Some(false))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("proj/chatfsck.toml: "), "{e}");
    }

    #[test]
    fn discovery_walks_up() {
        let d = tempfile::tempdir().unwrap();
        let deep = d.path().join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        assert_eq!(
            Config::discover(&deep).filter(|p| p.starts_with(d.path())),
            None
        );
        std::fs::write(d.path().join("a").join(FILE_NAME), "").unwrap();
        assert_eq!(
            Config::discover(&deep),
            Some(d.path().join("a").join(FILE_NAME))
        );
    }
}
