//! The `ringfront` binary: command line, configuration test, signals (HUP reload, QUIT
//! graceful exit, TERM/INT fast exit), `-s` to signal a running instance, and assembling the
//! engine. Everything else lives in the library crates.

mod cli;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};
use ringfront_config::{Config, CpuAffinity, WorkerProcesses};
use ringfront_proxy::{Driver, Engine, EngineOptions, Logger, Snapshot};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};

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

fn load(path: &Path) -> Result<(Config, Snapshot), String> {
    let cfg = ringfront_config::load(path).map_err(|e| e.to_string())?;
    let snap = Snapshot::build(&cfg, GENERATION.fetch_add(1, Ordering::Relaxed))
        .map_err(|e| format!("{e} in {}", cfg.path.display()))?;
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

fn driver(cli: &cli::Args) -> Driver {
    let wanted = cli
        .driver
        .clone()
        .or_else(|| std::env::var("RINGFRONT_DRIVER").ok())
        .unwrap_or_else(|| "auto".into());
    let detected = Driver::detect();
    if wanted == "epoll" {
        return Driver::Epoll;
    }
    if detected == Driver::Epoll {
        eprintln!("ringfront: [warn] io_uring is not available on this kernel, using epoll");
    }
    detected
}

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

fn main() {
    let args = match cli::parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("ringfront: {e}");
            eprintln!("{}", cli::USAGE);
            std::process::exit(2);
        }
    };
    if args.help {
        println!("{}", cli::USAGE);
        return;
    }
    if args.version {
        println!("ringfront version {}", env!("CARGO_PKG_VERSION"));
        return;
    }
    let code = match run(&args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("ringfront: [emerg] {e:#}");
            1
        }
    };
    std::process::exit(code);
}

fn run(args: &cli::Args) -> Result<()> {
    let path = args.config.clone();
    if let Some(sig) = &args.signal {
        return cli::send_signal(&path, sig);
    }
    if args.test {
        return match load(&path) {
            Ok(_) => {
                eprintln!(
                    "ringfront: the configuration file {} syntax is ok",
                    path.display()
                );
                eprintln!(
                    "ringfront: configuration file {} test is successful",
                    path.display()
                );
                Ok(())
            }
            Err(e) => {
                eprintln!("ringfront: [emerg] {e}");
                eprintln!(
                    "ringfront: configuration file {} test failed",
                    path.display()
                );
                std::process::exit(1);
            }
        };
    }
    let (cfg, snap) = load(&path).map_err(anyhow::Error::msg)?;
    let n = workers(&cfg, args);
    let opts = EngineOptions {
        workers: n,
        driver: driver(args),
        cpus: cpus(&cfg, args, n),
        release_memory: Some(release::memory),
    };
    let listens: Vec<String> = snap.listens.iter().map(|l| l.addr.to_string()).collect();
    let mut signals = signal_hook::iterator::Signals::new([SIGHUP, SIGQUIT, SIGTERM, SIGINT])
        .context("installing signal handlers")?;
    let (logger, log_thread) = Logger::start();
    let engine = Engine::start(snap, &opts, logger.clone()).context("starting workers")?;
    let pid = write_pid(&cfg);
    eprintln!(
        "ringfront: ready: {} worker(s), {} event loop, pinned to {:?}, listening on {}",
        n,
        opts.driver.name(),
        opts.cpus,
        listens.join(" ")
    );
    let mut engine = Some(engine);
    for sig in signals.forever() {
        let Some(e) = engine.as_ref() else { break };
        match sig {
            SIGHUP => match load(&path) {
                Ok((_, snap)) => {
                    e.reload(snap);
                    eprintln!(
                        "ringfront: [notice] reconfigured (generation {})",
                        e.generation()
                    );
                }
                Err(err) => {
                    eprintln!("ringfront: [emerg] {err}; keeping the running configuration")
                }
            },
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
        let _ = std::fs::remove_file(p);
    }
    logger.flush();
    drop(logger);
    drop(log_thread);
    eprintln!("ringfront: [notice] exiting");
    Ok(())
}
