//! `demo-backend --port P [--port P2 ...]`: testkit backends on 127.0.0.1 for demos and
//! manual runs (`curl 'localhost:P/?sleep=3'`, `?code=504`, `?size=N`, `?chunked=1`, ...).

use std::process::ExitCode;

use ringfront_testkit::Backend;

const USAGE: &str = "usage: demo-backend --port PORT [--port PORT ...]";

fn parse_ports(args: impl Iterator<Item = String>) -> Result<Vec<u16>, String> {
    let mut ports = Vec::new();
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let value = if arg == "--port" || arg == "-p" {
            args.next().ok_or("--port needs a value")?
        } else if let Some(v) = arg.strip_prefix("--port=") {
            v.to_string()
        } else if arg == "--help" || arg == "-h" {
            return Err(String::new());
        } else {
            return Err(format!("unknown argument {arg:?}"));
        };
        let port = value
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| format!("bad port {value:?}"))?;
        ports.push(port);
    }
    if ports.is_empty() {
        return Err("no --port given".to_string());
    }
    Ok(ports)
}

fn main() -> ExitCode {
    let ports = match parse_ports(std::env::args().skip(1)) {
        Ok(p) => p,
        Err(msg) => {
            if !msg.is_empty() {
                eprintln!("demo-backend: {msg}");
            }
            eprintln!("{USAGE}");
            return if msg.is_empty() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            };
        }
    };
    let backends: Vec<Backend> = ports.iter().map(|p| Backend::start_on(*p)).collect();
    for b in &backends {
        println!("demo-backend listening on {}", b.addr());
    }
    loop {
        std::thread::park();
    }
}
