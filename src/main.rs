use std::process::ExitCode;

use clap::Parser;

// Many small allocations cross threads (reader → parser → rules): mimalloc
// frees them without contending on glibc's arena locks. Built with
// `no_thp`: it does not ask the kernel for transparent huge pages. The heap
// of a lint turns over within a second, and zeroing 2 MiB pages for it cost
// 2-12 % of the million-chunk benchmark's CPU and some 20 MiB of peak RSS.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // An interrupted run removes the private copies and temporary output
    // it made before it exits.
    chatfsck::cleanup::on_interrupt();
    let cli = match chatfsck::cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                chatfsck::app::EXIT_ERROR
            } else {
                0
            };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    // A bug is reported in one line with exit code 2, like any error,
    // after the panic's own message (which says where it happened).
    let run = std::panic::catch_unwind(|| chatfsck::app::run(cli));
    // A run interrupted meanwhile ends with the interrupt's exit code.
    chatfsck::cleanup::settle();
    let Ok(run) = run else {
        eprintln!("error: internal error: chatfsck stopped on a bug; please report it");
        return ExitCode::from(chatfsck::app::EXIT_ERROR);
    };
    match run {
        Ok(code) => ExitCode::from(code),
        Err(chatfsck::error::Error::BrokenPipe) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(chatfsck::app::EXIT_ERROR)
        }
    }
}
