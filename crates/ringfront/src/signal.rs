//! `-s reload|reopen|quit|stop`: read the pid file named by the configuration (loaded with
//! the same `-p`/`-g` as the running instance) and signal the process it names.

use anyhow::{bail, Context, Result};

use crate::cli::Args;

pub fn send_signal(args: &Args, sig: &str) -> Result<()> {
    let signo = match sig {
        "reload" => libc::SIGHUP,
        "quit" => libc::SIGQUIT,
        "stop" => libc::SIGTERM,
        "reopen" => libc::SIGUSR1,
        _ => bail!("invalid option: \"-s {sig}\""),
    };
    let cfg = ringfront_config::load_with_options(
        &args.config_path(),
        &ringfront_config::OsHost,
        &args.load_options(),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let pid_path = cfg
        .main
        .pid
        .context("no \"pid\" directive in the configuration: cannot find the running instance")?;
    let text = std::fs::read_to_string(&pid_path)
        .with_context(|| format!("open() \"{}\" failed", pid_path.display()))?;
    let pid: i32 = text.trim().parse().with_context(|| {
        format!(
            "invalid PID number \"{}\" in \"{}\"",
            text.trim(),
            pid_path.display()
        )
    })?;
    signal(pid, signo).with_context(|| format!("kill({pid}, {signo}) failed"))
}

#[allow(unsafe_code)]
fn signal(pid: i32, signo: i32) -> std::io::Result<()> {
    // SAFETY: kill(2) has no memory-safety preconditions; it takes plain integers.
    let rc = unsafe { libc::kill(pid, signo) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}
