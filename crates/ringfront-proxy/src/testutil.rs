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
