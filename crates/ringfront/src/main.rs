//! The `ringfront` binary: command line, configuration test, signals (HUP reload, USR1 log
//! reopen, QUIT graceful exit, TERM/INT fast exit), `-s` to signal a running instance, and
//! assembling the engine. Everything else lives in the library crates.

mod cli;
mod dump;
mod early_log;
mod log_files;
mod signal;
mod version;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{bail, Context, Result};
use early_log::EarlyLog;
use ringfront_config::{Config, CpuAffinity, Host, LoadOptions, OsHost, WorkerProcesses};
use ringfront_proxy::{Claim, Driver, Engine, EngineOptions, Logger, Snapshot};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc purges freed pages only `purge_delay` (1 s) after they were freed and only when
/// the allocator is called again, so a worker that goes quiet after a burst keeps them;
/// the workers call this once they have been quiet for a second.
#[allow(unsafe_code)]
mod release {
    extern "C" {
        // mimalloc's `void mi_collect(bool force)`, from the library the global allocator
        // above links.
        fn mi_collect(force: bool);
    }

    /// Frees the calling thread's empty mimalloc pages and gives them back to the OS.
    pub fn memory() {
        // SAFETY: mi_collect takes no pointers and only releases memory mimalloc owns and
        // no longer hands out; mimalloc is this process's allocator.
        unsafe { mi_collect(true) }
    }
}

static GENERATION: AtomicU64 = AtomicU64::new(1);

fn load(path: &Path, opts: &LoadOptions) -> Result<(Config, Snapshot), String> {
    load_through(path, opts, &OsHost)
}

fn load_through(
    path: &Path,
    opts: &LoadOptions,
    host: &dyn Host,
) -> Result<(Config, Snapshot), String> {
    let cfg = ringfront_config::load_with_options(path, host, opts).map_err(|e| e.to_string())?;
    let snap = Snapshot::build(&cfg, GENERATION.fetch_add(1, Ordering::Relaxed)).map_err(|e| {
        match e.placed() {
            true => e.to_string(),
            false => format!("{e} in {}", cfg.path.display()),
        }
    })?;
    log_files::open_all(&cfg)?;
    Ok((cfg, snap))
}

fn workers(cfg: &Config, cli: &cli::Args) -> usize {
    let auto = || std::thread::available_parallelism().map_or(1, |n| n.get());
    match (cli.workers, &cfg.main.worker_processes) {
        (Some(0), _) => auto(),
        (Some(n), _) => n,
        (None, WorkerProcesses::Auto) => auto(),
        (None, WorkerProcesses::Count(n)) => (*n).max(1),
    }
}

fn cpus(cfg: &Config, cli: &cli::Args, workers: usize) -> Vec<usize> {
    let affinity = match &cli.cpu_affinity {
        Some(a) => a.clone(),
        None => cfg.main.worker_cpu_affinity.clone(),
    };
    match affinity {
        CpuAffinity::Off => Vec::new(),
        CpuAffinity::Auto => {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..workers).map(|i| i % n).collect()
        }
        CpuAffinity::Masks(masks) => masks.iter().map(|m| m.trailing_zeros() as usize).collect(),
    }
}

fn driver(cli: &cli::Args) -> Result<Driver> {
    let wanted = cli
        .driver
        .clone()
        .or_else(|| std::env::var("RINGFRONT_DRIVER").ok());
    let io_uring = Driver::detect() == Driver::IoUring;
    let driver = choose_driver(wanted.as_deref(), io_uring)?;
    if !io_uring && driver == Driver::Epoll && wanted.as_deref() != Some("epoll") {
        eprintln!("ringfront: [warn] io_uring is not available on this kernel, using epoll");
    }
    Ok(driver)
}

/// The event loop for `wanted` (`--driver`, else `RINGFRONT_DRIVER`; none is auto), given
/// whether this kernel sets up an io_uring (`Driver::detect`, passed in so the decision is
/// tested without such a kernel). A forced io_uring that cannot run is an error, never a
/// silent epoll.
fn choose_driver(wanted: Option<&str>, io_uring: bool) -> Result<Driver> {
    Ok(match wanted.unwrap_or("auto") {
        "epoll" => Driver::Epoll,
        "io_uring" | "iouring" if io_uring => Driver::IoUring,
        "io_uring" | "iouring" => bail!(
            "the io_uring event loop is forced (--driver or RINGFRONT_DRIVER) but io_uring is \
             not available on this kernel (a test ring could not be set up: an old kernel, \
             kernel.io_uring_disabled or a seccomp filter); use --driver epoll or auto"
        ),
        "auto" | "" if io_uring => Driver::IoUring,
        "auto" | "" => Driver::Epoll,
        other => bail!(
            "invalid event loop \"{other}\" (--driver or RINGFRONT_DRIVER): auto, io_uring or epoll"
        ),
    })
}

/// Claims the `listen` addresses of `snap` that this instance does not hold yet, then lets go
/// of those `snap` no longer has. All or nothing, as nginx: one address another process
/// holds fails the start, or the reload (the running configuration keeps serving).
fn claim_listens(held: &mut Vec<Claim>, snap: &Snapshot) -> Result<(), String> {
    let mut fresh: Vec<Claim> = Vec::new();
    for l in &snap.listens {
        if held.iter().chain(&fresh).any(|c| c.addr() == l.addr) {
            continue;
        }
        fresh.push(claim(l.addr)?);
    }
    held.retain(|c| snap.listens.iter().any(|l| l.addr == c.addr()));
    held.extend(fresh);
    Ok(())
}

/// nginx's patience with a taken address: five tries half a second apart, each failure
/// logged, then `still could not bind()`. It covers a predecessor that is still going away
/// (`systemctl restart`; the kernel closes the sockets of an io_uring a moment after its
/// process exits); other errors fail at once.
fn claim(addr: std::net::SocketAddr) -> Result<Claim, String> {
    const TRIES: u32 = 5;
    for left in (0..TRIES).rev() {
        match ringfront_proxy::claim(addr) {
            Ok(c) => return Ok(c),
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                eprintln!("ringfront: [emerg] {e}");
                if left > 0 {
                    std::thread::sleep(std::time::Duration::from_millis(500));
                }
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    Err("still could not bind()".into())
}

/// Written once every listener is bound, so an instance that fails to start never touches
/// the pid file of the one that runs.
fn write_pid(cfg: &Config) -> Option<PathBuf> {
    let path = cfg.main.pid.clone()?;
    if let Err(e) = std::fs::write(&path, format!("{}\n", std::process::id())) {
        eprintln!(
            "ringfront: [alert] open() \"{}\" failed ({e})",
            path.display()
        );
        return None;
    }
    Some(path)
}

/// Removes the pid file if it still names this process (another instance may have written
/// it since).
fn remove_pid(path: &Path) {
    let ours = std::fs::read_to_string(path)
        .is_ok_and(|text| text.trim() == std::process::id().to_string());
    if ours {
        let _ = std::fs::remove_file(path);
    }
}

fn main() {
    let args = match cli::parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("ringfront: {e}");
            std::process::exit(1);
        }
    };
    if args.version {
        eprintln!(
            "{}",
            match args.configure {
                true => version::configure_text(),
                false => version::version_line(),
            }
        );
    }
    if args.help {
        eprintln!("{}", cli::USAGE);
    }
    if args.help || (args.version && !args.test) {
        return;
    }
    let early = EarlyLog::new(args.error_log_path());
    let code = match run(&args, &early) {
        Ok(()) => 0,
        Err(e) => {
            early.emerg(&format!("{e:#}"));
            1
        }
    };
    std::process::exit(code);
}

/// `-t` / `-T`: nginx's two lines on success (not with `-q`), the dump on stdout with `-T`;
/// the error and `test failed` otherwise.
fn test_config(args: &cli::Args, early: &EarlyLog) -> Result<()> {
    let path = args.config_path();
    let host = dump::Recording::default();
    match load_through(&path, &args.load_options(), &host) {
        Ok((cfg, _)) => {
            for w in cfg.http2_warnings() {
                early.line("warn", &w);
            }
            if !args.quiet {
                let p = path.display();
                eprintln!("ringfront: the configuration file {p} syntax is ok");
                eprintln!("ringfront: configuration file {p} test is successful");
            }
            if args.dump {
                use std::io::Write;
                let _ = std::io::stdout().write_all(&host.dump());
            }
            Ok(())
        }
        Err(e) => {
            early.emerg(&e);
            eprintln!(
                "ringfront: configuration file {} test failed",
                path.display()
            );
            std::process::exit(1);
        }
    }
}

fn run(args: &cli::Args, early: &EarlyLog) -> Result<()> {
    let path = args.config_path();
    let opts = args.load_options();
    if let Some(sig) = &args.signal {
        return signal::send_signal(args, sig);
    }
    if args.test {
        return test_config(args, early);
    }
    let (cfg, snap) = load(&path, &opts).map_err(anyhow::Error::msg)?;
    for w in cfg.http2_warnings() {
        early.line("warn", &w);
    }
    let n = workers(&cfg, args);
    let engine_opts = EngineOptions {
        workers: n,
        driver: driver(args)?,
        cpus: cpus(&cfg, args, n),
        release_memory: Some(release::memory),
    };
    let listens: Vec<String> = snap.listens.iter().map(|l| l.name()).collect();
    let mut signals =
        signal_hook::iterator::Signals::new([SIGHUP, SIGUSR1, SIGQUIT, SIGTERM, SIGINT])
            .context("installing signal handlers")?;
    let mut claims = Vec::new();
    claim_listens(&mut claims, &snap).map_err(anyhow::Error::msg)?;
    let (logger, log_thread) = Logger::start();
    let engine = Engine::start(snap, &engine_opts, logger.clone()).context("starting workers")?;
    let pid = write_pid(&cfg);
    eprintln!(
        "ringfront: ready: {} worker(s), {} event loop, pinned to {:?}, listening on {}",
        n,
        engine_opts.driver.name(),
        engine_opts.cpus,
        listens.join(" ")
    );
    let mut engine = Some(engine);
    for sig in signals.forever() {
        let Some(e) = engine.as_ref() else { break };
        match sig {
            SIGHUP => match load(&path, &opts)
                .and_then(|(_, snap)| claim_listens(&mut claims, &snap).map(|()| snap))
                .and_then(|snap| e.reload(snap).map_err(|err| err.to_string()))
            {
                Ok(()) => {
                    eprintln!(
                        "ringfront: [notice] reconfigured (generation {})",
                        e.generation()
                    );
                }
                Err(err) => {
                    eprintln!("ringfront: [emerg] {err}; keeping the running configuration")
                }
            },
            SIGUSR1 => {
                eprintln!("ringfront: [notice] reopening logs");
                logger.reopen();
            }
            SIGQUIT => {
                eprintln!("ringfront: [notice] gracefully shutting down");
                if let Some(e) = engine.take() {
                    e.quit();
                }
                break;
            }
            _ => {
                if let Some(e) = engine.take() {
                    e.stop();
                }
                break;
            }
        }
    }
    if let Some(p) = pid {
        remove_pid(&p);
    }
    logger.flush();
    drop(logger);
    drop(log_thread);
    eprintln!("ringfront: [notice] exiting");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forced_io_uring_without_io_uring_is_an_error_naming_it() {
        for wanted in ["io_uring", "iouring"] {
            let err = choose_driver(Some(wanted), false).unwrap_err().to_string();
            assert!(err.contains("io_uring is not available"), "{err}");
            assert_eq!(choose_driver(Some(wanted), true).unwrap(), Driver::IoUring);
        }
    }

    #[test]
    fn auto_falls_back_to_epoll_and_epoll_is_always_possible() {
        assert_eq!(choose_driver(None, true).unwrap(), Driver::IoUring);
        assert_eq!(choose_driver(None, false).unwrap(), Driver::Epoll);
        assert_eq!(choose_driver(Some("auto"), false).unwrap(), Driver::Epoll);
        assert_eq!(choose_driver(Some(""), true).unwrap(), Driver::IoUring);
        assert_eq!(choose_driver(Some("epoll"), true).unwrap(), Driver::Epoll);
        assert_eq!(choose_driver(Some("epoll"), false).unwrap(), Driver::Epoll);
    }

    #[test]
    fn an_unknown_driver_is_an_error() {
        let err = choose_driver(Some("kqueue"), true).unwrap_err().to_string();
        assert!(err.contains("invalid event loop \"kqueue\""), "{err}");
    }
}
