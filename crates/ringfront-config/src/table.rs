//! The directive table: every directive ringfront recognises, the contexts it may appear in,
//! its argument count, whether it takes a block, and whether it is read, ignored (no-op) or
//! refused (not supported yet). One row per (name, contexts), as nginx's command arrays.

pub(crate) const MAIN: u16 = 1;
pub(crate) const EVENTS: u16 = 1 << 1;
pub(crate) const HTTP: u16 = 1 << 2;
pub(crate) const SERVER: u16 = 1 << 3;
pub(crate) const LOCATION: u16 = 1 << 4;
pub(crate) const UPSTREAM: u16 = 1 << 5;
/// Inside `if` (nginx's SIF and LIF contexts, which take the same rewrite directives).
pub(crate) const IF: u16 = 1 << 6;
/// Inside `limit_except` (nginx's LMT context).
pub(crate) const LIMIT: u16 = 1 << 7;
const SLI: u16 = SERVER | LOCATION | IF;
const HSL: u16 = HTTP | SERVER | LOCATION;
const HS: u16 = HTTP | SERVER;
const SL: u16 = SERVER | LOCATION;
pub(crate) const MANY: u8 = u8::MAX;

/// How a no-op directive's arguments are still checked (a typo stays an error).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    Any,
    /// `on` or `off`.
    Flag,
    /// Only `off` is harmless; `on` would change behaviour and is not supported yet.
    OffOnly,
    /// Only these words are harmless.
    Only(&'static [&'static str]),
    Number,
    Size,
    /// `PATH [LEVEL1 [LEVEL2 [LEVEL3]]]` of the `*_temp_path` directives.
    TempPath,
    /// Strings with variables (each must name known variables).
    Templates,
    /// A millisecond-slot time (`ngx_conf_set_msec_slot`).
    Msec,
    /// `worker_priority [-|+]N`.
    Priority,
    /// `thread_pool NAME threads=N [max_queue=N]`.
    ThreadPool,
    /// `open_log_file_cache off | max=N [inactive=T] [min_uses=N] [valid=T]`.
    LogFileCache,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Read into the model by the builder.
    Handled,
    /// Accepted, checked and ignored (see [`NOOP_DIRECTIVES`]).
    NoOp(Check),
    /// An nginx directive ringfront does not implement yet: always an error, never ignored.
    Unsupported,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Block {
    No,
    Yes,
    Either,
}

#[derive(Debug)]
pub(crate) struct Spec {
    pub name: &'static str,
    pub ctx: u16,
    pub min: u8,
    pub max: u8,
    pub block: Block,
    pub kind: Kind,
}

const fn d(name: &'static str, ctx: u16, min: u8, max: u8) -> Spec {
    Spec {
        name,
        ctx,
        min,
        max,
        block: Block::No,
        kind: Kind::Handled,
    }
}

const fn b(name: &'static str, ctx: u16, min: u8, max: u8) -> Spec {
    Spec {
        name,
        ctx,
        min,
        max,
        block: Block::Yes,
        kind: Kind::Handled,
    }
}

const fn noop(name: &'static str, ctx: u16, min: u8, max: u8, check: Check) -> Spec {
    Spec {
        name,
        ctx,
        min,
        max,
        block: Block::No,
        kind: Kind::NoOp(check),
    }
}

const fn unsupported(name: &'static str, ctx: u16, min: u8, max: u8) -> Spec {
    Spec {
        name,
        ctx,
        min,
        max,
        block: Block::Either,
        kind: Kind::Unsupported,
    }
}

/// Directives accepted and ignored because they only tune things ringfront does its own way
/// (sendfile, buffering, MIME types, hash sizes) or, with the arguments allowed, change
/// nothing. Keep in step with the `noop` rows of the table (a test checks).
#[rustfmt::skip]
pub const NOOP_DIRECTIVES: &[&str] = &[
    "user", "worker_rlimit_nofile", "use", "multi_accept", "accept_mutex",
    "sendfile", "tcp_nopush", "tcp_nodelay", "gzip_static",
    "charset", "autoindex", "reset_timedout_connection",
    "server_names_hash_bucket_size", "server_names_hash_max_size", "types_hash_max_size",
    "types_hash_bucket_size", "proxy_buffering", "proxy_buffer_size", "proxy_buffers",
    "proxy_busy_buffers_size", "client_header_buffer_size",
    // TLS knobs with nothing to do here (docs/configuration.md, "Accepted and ignored")
    "ssl_buffer_size", "ssl_early_data",
    // nginx's buffering to disk; ringfront streams (docs/configuration.md, "Accepted and
    // ignored")
    "proxy_temp_path", "fastcgi_temp_path", "uwsgi_temp_path",
    "scgi_temp_path", "proxy_max_temp_file_size", "proxy_temp_file_write_size",
    "connection_pool_size", "request_pool_size", "client_body_in_single_buffer",
    "uninitialized_variable_warn", "proxy_cache_bypass", "proxy_no_cache",
    "postpone_output", "open_file_cache", "open_file_cache_valid", "open_file_cache_min_uses",
    "open_file_cache_errors", "output_buffers", "aio", "directio", "directio_alignment",
    "read_ahead",
    // hash sizing, process and event tuning, subrequest and MSIE knobs (docs/configuration.md,
    // "Accepted and ignored")
    "map_hash_bucket_size", "map_hash_max_size", "variables_hash_bucket_size",
    "variables_hash_max_size", "proxy_headers_hash_bucket_size", "proxy_headers_hash_max_size",
    "referer_hash_bucket_size", "referer_hash_max_size", "pcre_jit", "timer_resolution",
    "worker_priority", "worker_rlimit_core", "working_directory", "lock_file",
    "accept_mutex_delay", "thread_pool", "debug_connection", "worker_aio_requests",
    "open_log_file_cache", "sendfile_max_chunk", "send_lowat", "subrequest_output_buffer_size",
    "log_subrequest", "msie_padding", "msie_refresh",
    // HTTP/2 tuning: ringfront speaks HTTP/1.1 (`listen ... ssl http2` is accepted, with a
    // warning; docs/configuration.md, "Accepted and ignored")
    "http2_recv_buffer_size", "http2_pool_size", "http2_max_concurrent_streams",
    "http2_max_concurrent_pushes", "http2_body_preread_size", "http2_streams_index_size",
    "http2_max_requests", "http2_max_field_size", "http2_max_header_size",
    "http2_recv_timeout", "http2_idle_timeout", "http2_chunk_size", "http2_push_preload",
    "http2_push",
];

#[rustfmt::skip]
pub(crate) static TABLE: &[Spec] = &[
    // main and events
    d("worker_processes", MAIN, 1, 1),
    d("worker_cpu_affinity", MAIN, 1, MANY),
    d("daemon", MAIN, 1, 1),
    d("master_process", MAIN, 1, 1),
    d("pid", MAIN, 1, 1),
    d("worker_shutdown_timeout", MAIN, 1, 1),
    d("error_log", MAIN | HSL, 1, MANY),
    b("events", MAIN, 0, 0),
    b("http", MAIN, 0, 0),
    d("worker_connections", EVENTS, 1, 1),
    // http
    b("upstream", HTTP, 1, 1),
    b("server", HTTP, 0, 0),
    d("log_format", HTTP, 2, MANY),
    // nginx Plus: the tests of `health_check match=NAME`; its body is read by `match_block`
    b("match", HTTP, 1, 1),
    d("access_log", HSL | LIMIT, 1, MANY),
    // upstream
    d("server", UPSTREAM, 1, MANY),
    d("keepalive", UPSTREAM, 1, 1),
    d("keepalive_timeout", UPSTREAM, 1, 1),
    d("keepalive_requests", UPSTREAM, 1, 1),
    d("keepalive_time", UPSTREAM, 1, 1),
    d("ip_hash", UPSTREAM, 0, 0),
    d("least_conn", UPSTREAM, 0, 0),
    d("hash", UPSTREAM, 1, 2),
    d("random", UPSTREAM, 0, 2),
    d("zone", UPSTREAM, 1, 2),
    d("state", UPSTREAM, 1, 1),
    // nginx Plus
    d("least_time", UPSTREAM, 1, 2),
    // the third-party upstream_fair module, read as `least_time header`
    d("fair", UPSTREAM, 0, 0),
    // nginx Plus, open nginx 1.29.6+ (sticky.rs)
    d("sticky", UPSTREAM, 2, MANY),
    // ringfront only
    d("all_failed", UPSTREAM, 1, 1),
    d("passive_health", UPSTREAM, 1, 1),
    // Tengine's ngx_http_upstream_check_module
    d("check", UPSTREAM, 1, MANY),
    d("check_http_send", UPSTREAM, 1, 1),
    d("check_http_expect_alive", UPSTREAM, 1, MANY),
    d("check_keepalive_requests", UPSTREAM, 1, 1),
    // server
    d("listen", SERVER, 1, MANY),
    d("server_name", SERVER, 1, MANY),
    b("location", SERVER | LOCATION, 1, 2),
    // location-level settings, inherited http -> server -> location
    d("proxy_pass", LOCATION | LIMIT, 1, 1),
    d("proxy_set_header", HSL, 2, 2),
    d("proxy_http_version", HSL, 1, 1),
    d("proxy_method", HSL, 1, 1),
    d("proxy_pass_request_headers", HSL, 1, 1),
    d("proxy_pass_request_body", HSL, 1, 1),
    d("proxy_ignore_client_abort", HSL, 1, 1),
    d("client_body_in_file_only", HSL, 1, 1),
    // request bodies (request_body.rs)
    d("proxy_request_buffering", HSL, 1, 1),
    d("client_body_buffer_size", HSL, 1, 1),
    d("client_body_temp_path", HSL, 1, 4),
    d("proxy_set_body", HSL, 1, 1),
    d("proxy_bind", HSL, 1, 2),
    d("proxy_connect_timeout", HSL, 1, 1),
    d("proxy_read_timeout", HSL, 1, 1),
    d("proxy_send_timeout", HSL, 1, 1),
    d("proxy_next_upstream", HSL, 1, MANY),
    d("proxy_next_upstream_tries", HSL, 1, 1),
    d("proxy_next_upstream_timeout", HSL, 1, 1),
    // ringfront only (retry_budget.rs)
    d("proxy_next_upstream_budget", HSL, 1, 2),
    // the upstream response's fields (proxy_headers.rs)
    d("proxy_hide_header", HSL, 1, 1),
    d("proxy_pass_header", HSL, 1, 1),
    d("proxy_ignore_headers", HSL, 1, MANY),
    d("proxy_redirect", HSL, 1, 2),
    d("proxy_cookie_domain", HSL, 1, 2),
    d("proxy_cookie_path", HSL, 1, 2),
    d("proxy_cookie_flags", HSL, 1, 4),
    // the rewrite module (rewrite.rs, rewrite_if.rs)
    d("return", SLI, 1, 2),
    d("rewrite", SLI, 2, 3),
    d("set", SLI, 2, 2),
    d("break", SLI, 0, 0),
    b("if", SL, 1, MANY),
    d("rewrite_log", HSL | IF, 1, 1),
    d("error_page", HSL, 2, MANY),
    // error_pages.rs
    d("recursive_error_pages", HSL, 1, 1),
    d("proxy_intercept_errors", HSL, 1, 1),
    d("absolute_redirect", HSL, 1, 1),
    d("port_in_redirect", HSL, 1, 1),
    d("server_name_in_redirect", HSL, 1, 1),
    // the static module (files.rs)
    d("root", HSL, 1, 1),
    d("alias", LOCATION, 1, 1),
    d("index", HSL, 1, MANY),
    b("types", HSL, 0, 0),
    d("default_type", HSL, 1, 1),
    d("expires", HSL, 1, 2),
    d("try_files", SL, 2, MANY),
    d("if_modified_since", HSL, 1, 1),
    d("log_not_found", HSL, 1, 1),
    d("etag", HSL, 1, 1),
    d("max_ranges", HSL, 1, 1),
    d("keepalive_timeout", HSL, 1, 2),
    d("keepalive_requests", HSL, 1, 1),
    d("keepalive_time", HSL, 1, 1),
    d("keepalive_disable", HSL, 1, MANY),
    d("client_max_body_size", HSL, 1, 1),
    d("client_header_timeout", HS, 1, 1),
    d("client_body_timeout", HSL, 1, 1),
    d("send_timeout", HSL, 1, 1),
    d("limit_rate", HSL, 1, 1),
    d("limit_rate_after", HSL, 1, 1),
    d("proxy_limit_rate", HSL, 1, 1),
    d("large_client_header_buffers", HS, 2, 2),
    d("allow", HSL | LIMIT, 1, 1),
    d("deny", HSL | LIMIT, 1, 1),
    d("auth_basic", HSL | LIMIT, 1, 1),
    d("auth_basic_user_file", HSL | LIMIT, 1, 1),
    d("satisfy", HSL, 1, 1),
    d("auth_delay", HSL, 1, 1),
    b("limit_except", LOCATION, 1, MANY),
    d("add_header", HSL, 2, 3),
    d("add_trailer", HSL, 2, 3),
    d("chunked_transfer_encoding", HSL, 1, 1),
    d("underscores_in_headers", HS, 1, 1),
    d("ignore_invalid_headers", HS, 1, 1),
    d("max_headers", HS, 1, 1),
    d("merge_slashes", HS, 1, 1),
    d("proxy_socket_keepalive", HSL, 1, 1),
    d("lingering_close", HSL, 1, 1),
    d("lingering_time", HSL, 1, 1),
    d("lingering_timeout", HSL, 1, 1),
    d("server_tokens", HSL, 1, 1),
    // the name servers of proxy_pass with variables and `server NAME resolve` (resolver.rs)
    d("resolver", HSL | UPSTREAM, 1, MANY),
    d("resolver_timeout", HSL | UPSTREAM, 1, 1),
    // response compression (gzip.rs)
    d("gzip", HSL, 1, 1),
    d("gzip_types", HSL, 1, MANY),
    d("gzip_min_length", HSL, 1, 1),
    d("gzip_comp_level", HSL, 1, 1),
    d("gzip_proxied", HSL, 1, MANY),
    d("gzip_vary", HSL, 1, 1),
    d("gzip_disable", HSL, 1, MANY),
    d("gzip_http_version", HSL, 1, 1),
    d("gzip_buffers", HSL, 2, 2),
    // the realip module (realip.rs)
    d("set_real_ip_from", HSL, 1, 1),
    d("real_ip_header", HSL, 1, 1),
    d("real_ip_recursive", HSL, 1, 1),
    // TLS at the edge (ssl.rs): http and server level
    d("ssl", HS, 1, 1),
    d("ssl_certificate", HS, 1, 1),
    d("ssl_certificate_key", HS, 1, 1),
    d("ssl_protocols", HS, 1, MANY),
    d("ssl_ciphers", HS, 1, 1),
    d("ssl_prefer_server_ciphers", HS, 1, 1),
    d("ssl_session_cache", HS, 1, 2),
    d("ssl_session_timeout", HS, 1, 1),
    d("ssl_session_tickets", HS, 1, 1),
    d("ssl_session_ticket_key", HS, 1, 1),
    d("ssl_dhparam", HS, 1, 1),
    d("ssl_ecdh_curve", HS, 1, 1),
    d("ssl_verify_client", HS, 1, 1),
    d("ssl_verify_depth", HS, 1, 1),
    d("ssl_client_certificate", HS, 1, 1),
    d("ssl_trusted_certificate", HS, 1, 1),
    d("ssl_crl", HS, 1, 1),
    // OCSP stapling (ringfront-tls stapling.rs)
    d("ssl_stapling", HS, 1, 1),
    d("ssl_stapling_file", HS, 1, 1),
    d("ssl_stapling_responder", HS, 1, 1),
    d("ssl_stapling_verify", HS, 1, 1),
    // client certificates' OCSP (ringfront-tls client_ocsp.rs)
    d("ssl_ocsp", HS, 1, 1),
    d("ssl_ocsp_responder", HS, 1, 1),
    d("ssl_ocsp_cache", HS, 1, 1),
    d("ssl_password_file", HS, 1, 1),
    d("ssl_reject_handshake", HS, 1, 1),
    // TLS to upstreams
    d("proxy_ssl_verify", HSL, 1, 1),
    d("proxy_ssl_verify_depth", HSL, 1, 1),
    d("proxy_ssl_trusted_certificate", HSL, 1, 1),
    d("proxy_ssl_crl", HSL, 1, 1),
    d("proxy_ssl_password_file", HSL, 1, 1),
    d("proxy_ssl_server_name", HSL, 1, 1),
    d("proxy_ssl_name", HSL, 1, 1),
    d("proxy_ssl_protocols", HSL, 1, MANY),
    d("proxy_ssl_ciphers", HSL, 1, 1),
    d("proxy_ssl_certificate", HSL, 1, 1),
    d("proxy_ssl_certificate_key", HSL, 1, 1),
    d("proxy_ssl_session_reuse", HSL, 1, 1),
    // location only, never inherited: nginx Plus `health_check` and `api`, Tengine
    // `check_status`
    d("health_check", LOCATION, 0, MANY),
    d("check_status", LOCATION, 0, 1),
    d("api", LOCATION, 0, 1),
    d("stub_status", LOCATION, 0, 1),
    // no-ops (NOOP_DIRECTIVES)
    noop("user", MAIN, 1, 2, Check::Any),
    noop("worker_rlimit_nofile", MAIN, 1, 1, Check::Number),
    noop("use", EVENTS, 1, 1, Check::Any),
    noop("multi_accept", EVENTS, 1, 1, Check::Flag),
    noop("accept_mutex", EVENTS, 1, 1, Check::Flag),
    noop("sendfile", HSL, 1, 1, Check::Flag),
    noop("tcp_nopush", HSL, 1, 1, Check::Flag),
    noop("tcp_nodelay", HSL, 1, 1, Check::Flag),
    // gzip.rs has the module; precompressed files are not looked for.
    noop("gzip_static", HSL, 1, 1, Check::Only(&["off"])),
    noop("charset", HSL, 1, 1, Check::Any),
    noop("autoindex", HSL, 1, 1, Check::OffOnly),
    noop("reset_timedout_connection", HSL, 1, 1, Check::Flag),
    noop("server_names_hash_bucket_size", HTTP, 1, 1, Check::Number),
    noop("server_names_hash_max_size", HTTP, 1, 1, Check::Number),
    noop("types_hash_max_size", HSL, 1, 1, Check::Number),
    noop("types_hash_bucket_size", HSL, 1, 1, Check::Number),
    noop("proxy_buffering", HSL, 1, 1, Check::Flag),
    noop("proxy_buffer_size", HSL, 1, 1, Check::Size),
    noop("proxy_buffers", HSL, 2, 2, Check::Any),
    noop("proxy_busy_buffers_size", HSL, 1, 1, Check::Size),
    noop("client_header_buffer_size", HS, 1, 1, Check::Size),
    // TLS: records are rustls's (16 KiB, as nginx's default ssl_buffer_size); 0-RTT is
    // not offered, so only its off value is harmless.
    noop("ssl_buffer_size", HS, 1, 1, Check::Size),
    noop("ssl_early_data", HS, 1, 1, Check::OffOnly),
    // Disk buffering and memory pools: ringfront streams bodies through fixed buffers and
    // never writes them to temporary files, and allocates per connection its own way.
    // Test::Nginx writes the `*_temp_path` ones into every configuration.
    noop("proxy_temp_path", HSL, 1, 4, Check::TempPath),
    noop("fastcgi_temp_path", HSL, 1, 4, Check::TempPath),
    noop("uwsgi_temp_path", HSL, 1, 4, Check::TempPath),
    noop("scgi_temp_path", HSL, 1, 4, Check::TempPath),
    noop("proxy_max_temp_file_size", HSL, 1, 1, Check::Size),
    noop("proxy_temp_file_write_size", HSL, 1, 1, Check::Size),
    noop("connection_pool_size", HS, 1, 1, Check::Size),
    noop("request_pool_size", HS, 1, 1, Check::Size),
    noop("client_body_in_single_buffer", HSL, 1, 1, Check::Flag),
    // ringfront does not warn about variables read before a `set` gave them a value.
    noop("uninitialized_variable_warn", HSL | IF, 1, 1, Check::Flag),
    // Without a cache (`proxy_cache` is refused) these decide nothing: the widely copied
    // WebSocket snippet `proxy_cache_bypass $http_upgrade;` is a no-op in nginx too.
    noop("proxy_cache_bypass", HSL, 1, MANY, Check::Templates),
    noop("proxy_no_cache", HSL, 1, MANY, Check::Templates),
    // nginx holds small writes back until this many bytes are pending; ringfront writes
    // what a step produced (heads and body chunks coalesced per write).
    noop("postpone_output", HSL, 1, 1, Check::Size),
    // How nginx reads static files (descriptor cache, buffers, thread or direct I/O): ringfront
    // opens every file afresh and reads it through the ring, so none of these change what a
    // client gets. Common in tuned `http` blocks.
    noop("open_file_cache", HSL, 1, 2, Check::Any),
    noop("open_file_cache_valid", HSL, 1, 1, Check::Any),
    noop("open_file_cache_min_uses", HSL, 1, 1, Check::Number),
    noop("open_file_cache_errors", HSL, 1, 1, Check::Flag),
    noop("output_buffers", HSL, 2, 2, Check::Any),
    noop("aio", HSL, 1, 1, Check::Any),
    noop("directio", HSL, 1, 1, Check::Any),
    noop("directio_alignment", HSL, 1, 1, Check::Size),
    noop("read_ahead", HSL, 1, 1, Check::Size),
    // Hash table sizing: ringfront's maps, variables and header lists are not nginx's hashes.
    noop("map_hash_bucket_size", HTTP, 1, 1, Check::Number),
    noop("map_hash_max_size", HTTP, 1, 1, Check::Number),
    noop("variables_hash_bucket_size", HTTP, 1, 1, Check::Number),
    noop("variables_hash_max_size", HTTP, 1, 1, Check::Number),
    noop("proxy_headers_hash_bucket_size", HSL, 1, 1, Check::Number),
    noop("proxy_headers_hash_max_size", HSL, 1, 1, Check::Number),
    noop("referer_hash_bucket_size", SL, 1, 1, Check::Number),
    noop("referer_hash_max_size", SL, 1, 1, Check::Number),
    // Process and event-loop tuning of nginx's own master/worker model: ringfront compiles its
    // regexes its own way, reads the clock per event, runs no thread pools and takes no
    // accept lock; core dumps, niceness and the working directory are left to the service
    // manager (the values are checked, not applied).
    noop("pcre_jit", MAIN, 1, 1, Check::Flag),
    noop("timer_resolution", MAIN, 1, 1, Check::Msec),
    noop("worker_priority", MAIN, 1, 1, Check::Priority),
    noop("worker_rlimit_core", MAIN, 1, 1, Check::Size),
    noop("working_directory", MAIN, 1, 1, Check::Any),
    noop("lock_file", MAIN, 1, 1, Check::Any),
    noop("thread_pool", MAIN, 2, 3, Check::ThreadPool),
    noop("accept_mutex_delay", EVENTS, 1, 1, Check::Msec),
    noop("debug_connection", EVENTS, 1, 1, Check::Any),
    noop("worker_aio_requests", EVENTS, 1, 1, Check::Number),
    // ringfront keeps its log files open for the life of the configuration; it sends with
    // plain writes (no sendfile chunks, no SO_SNDLOWAT, which Linux cannot set anyway); it
    // makes no subrequests; and it never pads error pages or rewrites redirects for MSIE
    // (docs/configuration.md, deviations: `msie_padding`).
    noop("open_log_file_cache", HSL, 1, 4, Check::LogFileCache),
    noop("sendfile_max_chunk", HSL, 1, 1, Check::Size),
    noop("send_lowat", HSL, 1, 1, Check::Size),
    noop("subrequest_output_buffer_size", HSL, 1, 1, Check::Size),
    noop("log_subrequest", HSL, 1, 1, Check::Flag),
    noop("msie_padding", HSL, 1, 1, Check::Flag),
    noop("msie_refresh", HSL, 1, 1, Check::OffOnly),
    // HTTP/2 tuning: no HTTP/2 is spoken (ALPN offers http/1.1 only), so none applies. The
    // five nginx 1.19.7 made obsolete take any value there too (with a warning).
    noop("http2_recv_buffer_size", HTTP, 1, 1, Check::Size),
    noop("http2_pool_size", HS, 1, 1, Check::Size),
    noop("http2_max_concurrent_streams", HS, 1, 1, Check::Number),
    noop("http2_max_concurrent_pushes", HS, 1, 1, Check::Number),
    noop("http2_body_preread_size", HS, 1, 1, Check::Size),
    noop("http2_streams_index_size", HS, 1, 1, Check::Number),
    noop("http2_max_requests", HS, 1, 1, Check::Any),
    noop("http2_max_field_size", HS, 1, 1, Check::Any),
    noop("http2_max_header_size", HS, 1, 1, Check::Any),
    noop("http2_recv_timeout", HS, 1, 1, Check::Any),
    noop("http2_idle_timeout", HS, 1, 1, Check::Any),
    noop("http2_chunk_size", HSL, 1, 1, Check::Size),
    noop("http2_push_preload", HSL, 1, 1, Check::Flag),
    noop("http2_push", HSL, 1, 1, Check::Any),
    // nginx directives not implemented yet: an error, so no configuration is half-understood
    d("internal", LOCATION, 0, 0),
    unsupported("proxy_cache", HSL, 1, 1),
    unsupported("proxy_cache_path", HTTP, 2, MANY),
    b("map", HTTP, 2, 2),
    b("geo", HTTP, 1, 2),
    b("split_clients", HTTP, 2, 2),
    d("limit_req_zone", HTTP, 3, 3),
    d("limit_req", HSL, 1, 3),
    d("limit_req_status", HSL, 1, 1),
    d("limit_req_log_level", HSL, 1, 1),
    d("limit_req_dry_run", HSL, 1, 1),
    d("limit_conn_zone", HTTP, 2, 2),
    d("limit_conn", HSL, 2, 2),
    d("limit_conn_status", HSL, 1, 1),
    d("limit_conn_log_level", HSL, 1, 1),
    d("limit_conn_dry_run", HSL, 1, 1),
    unsupported("allow", HSL, 1, 1),
    unsupported("deny", HSL, 1, 1),
    unsupported("stub_status", SL, 0, 1),
    unsupported("load_module", MAIN, 1, 1),
    unsupported("stream", MAIN, 0, 0),
    unsupported("mail", MAIN, 0, 0),
    unsupported("env", MAIN, 1, 1),
];
