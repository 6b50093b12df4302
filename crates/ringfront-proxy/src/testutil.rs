//! Helpers the crate's socket-level unit tests share.

/// Runs `f` on an epoll runtime and, where the kernel has it, an io_uring one.
pub fn on_both<F, Fut>(f: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    monoio::RuntimeBuilder::<monoio::LegacyDriver>::new()
        .enable_timer()
        .build()
        .expect("epoll runtime")
        .block_on(f());
    if let Ok(mut rt) = monoio::RuntimeBuilder::<monoio::IoUringDriver>::new()
        .enable_timer()
        .build()
    {
        rt.block_on(f());
    }
}

/// A request's bytes and parsed head.
pub fn request_head(bytes: &[u8]) -> (Vec<u8>, ringfront_http::RequestHead) {
    let mut head = ringfront_http::RequestHead::new();
    head.parse(bytes)
        .expect("valid head")
        .expect("complete head");
    (bytes.to_vec(), head)
}

/// A request on 127.0.0.1:80 from 127.0.0.1:40000, path `/`, kept alive.
pub fn req<'a>(buf: &'a [u8], head: &'a ringfront_http::RequestHead) -> crate::req::Req<'a> {
    crate::req::Req {
        buf,
        head,
        client: ([127, 0, 0, 1], 40000).into(),
        local: ([127, 0, 0, 1], 80).into(),
        server_name: "localhost",
        conn_id: 1,
        conn_requests: 1,
        start: std::time::Instant::now(),
        path: "/",
        keep_alive: true,
        head_only: false,
        pipelined: &[],
        tls: None,
        rw: None,
        body: &[],
        opened_ms: 0,
        stats: &[],
        length: 0,
        tries: &[],
        id: [0; 16],
        body_len: 0,
        proxy_protocol: None,
        realip_from: None,
        client_conn: None,
        standing: None,
        body_file: &[],
        body_stream: None,
        spooled: None,
    }
}
