//! Command-line flags, nginx's where nginx has one (`-c -t -s -v`), plus the engine's own:
//! `--workers N`, `--cpu-affinity auto|off|LIST`, `--driver auto|io_uring|epoll`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use ringfront_config::CpuAffinity;

pub const USAGE: &str = "usage: ringfront [-c FILE] [-t] [-s reload|reopen|quit|stop] [-v]
       [--workers N|auto] [--cpu-affinity auto|off|CPU,CPU,...] [--driver auto|io_uring|epoll]

  -c FILE            configuration file (default: config/ringfront.conf)
  -t                 test the configuration and exit
  -s SIGNAL          send reload (HUP), reopen (USR1: reopen log files), quit (QUIT) or
                     stop (TERM) to the running instance named by the configuration's pid file
  --workers N        worker threads (overrides worker_processes; auto = one per core)
  --cpu-affinity A   pin workers: auto (worker i on core i), off, or a list of CPU ids
  --driver D         event loop: io_uring, epoll, or auto (io_uring when available);
                     also RINGFRONT_DRIVER";

#[derive(Debug, Default)]
pub struct Args {
    pub config: PathBuf,
    pub test: bool,
    pub signal: Option<String>,
    pub workers: Option<usize>,
    pub cpu_affinity: Option<CpuAffinity>,
    pub driver: Option<String>,
    pub help: bool,
    pub version: bool,
}

pub fn parse(mut it: impl Iterator<Item = String>) -> Result<Args> {
    let mut a = Args {
        config: PathBuf::from("config/ringfront.conf"),
        ..Args::default()
    };
    while let Some(arg) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .with_context(|| format!("option \"{name}\" requires an argument"))
        };
        match arg.as_str() {
            "-c" => a.config = PathBuf::from(value("-c")?),
            "-t" | "-T" => a.test = true,
            "-s" => a.signal = Some(value("-s")?),
            "-h" | "-?" | "--help" => a.help = true,
            "-v" | "-V" | "--version" => a.version = true,
            "--workers" => {
                let v = value("--workers")?;
                a.workers = Some(if v == "auto" {
                    0
                } else {
                    v.parse()
                        .with_context(|| format!("invalid --workers \"{v}\""))?
                });
            }
            "--cpu-affinity" => {
                let v = value("--cpu-affinity")?;
                a.cpu_affinity = Some(match v.as_str() {
                    "auto" => CpuAffinity::Auto,
                    "off" => CpuAffinity::Off,
                    list => CpuAffinity::Masks(
                        list.split(',')
                            .map(|c| {
                                c.trim()
                                    .parse::<u32>()
                                    .ok()
                                    .filter(|&c| c < 64)
                                    .map(|c| 1u64 << c)
                            })
                            .collect::<Option<Vec<_>>>()
                            .with_context(|| format!("invalid --cpu-affinity \"{v}\""))?,
                    ),
                });
            }
            "--driver" => {
                let v = value("--driver")?;
                if !matches!(v.as_str(), "auto" | "io_uring" | "iouring" | "epoll") {
                    bail!("invalid --driver \"{v}\"");
                }
                a.driver = Some(v);
            }
            other => bail!("invalid option: \"{other}\""),
        }
    }
    Ok(a)
}

/// `-s reload|reopen|quit|stop`: read the pid file named by the configuration and signal it.
pub fn send_signal(config: &Path, sig: &str) -> Result<()> {
    let signo = match sig {
        "reload" => libc::SIGHUP,
        "quit" => libc::SIGQUIT,
        "stop" => libc::SIGTERM,
        "reopen" => libc::SIGUSR1,
        _ => bail!("invalid option: \"-s {sig}\""),
    };
    let cfg = ringfront_config::load(config).map_err(|e| anyhow::anyhow!("{e}"))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> Result<Args> {
        parse(s.split_whitespace().map(String::from))
    }

    #[test]
    fn flags() {
        let a = args("-c x.conf -t --workers 3 --cpu-affinity 1,3 --driver epoll").unwrap();
        assert_eq!(a.config, PathBuf::from("x.conf"));
        assert!(a.test);
        assert_eq!(a.workers, Some(3));
        assert_eq!(a.cpu_affinity, Some(CpuAffinity::Masks(vec![2, 8])));
        assert_eq!(a.driver.as_deref(), Some("epoll"));
        assert!(args("--driver kqueue").is_err());
        assert!(args("-c").is_err());
        assert!(args("--bogus").is_err());
        assert_eq!(args("--workers auto").unwrap().workers, Some(0));
    }
}
