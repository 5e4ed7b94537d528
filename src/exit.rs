//! The process exit codes (DESIGN.md, "Exit codes"): every command returns
//! one of these.

/// Nothing at or above the failing severity.
pub const EXIT_CLEAN: u8 = 0;
/// Findings at or above the failing severity (lint), or a difference (diff).
pub const EXIT_FINDINGS: u8 = 1;
/// The tool could not do its job: bad arguments, an unreadable input.
pub const EXIT_ERROR: u8 = 2;
/// A run stopped by a signal (the shell's 128 + SIGINT); see [`crate::cleanup`].
pub const EXIT_INTERRUPTED: u8 = 130;
