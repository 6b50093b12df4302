//! Per-location settings as written at one level (http, server or location), and nginx's merge:
//! a level inherits every setting it does not write from the level around it, then nginx's
//! defaults fill what no level wrote. Lists (`proxy_set_header`, `error_page`, `access_log`,
//! `add_header`) are inherited whole, or replaced whole by a level that writes any entry.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::model::{
    AccessLog, AccessRule, AddHeader, ErrorPage, LocationSettings, NextUpstream, Origin, ProxyPass,
    ServerTokens, SizeValue, Template,
};
use crate::rewrite_model::RewriteOp;

/// `proxy_pass http://host[:port][/uri]` before its target is looked up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PassRaw {
    pub host: String,
    pub port: Option<u16>,
    /// `host[:port]` as written, the implicit upstream's name.
    pub authority: String,
    pub uri: Option<String>,
    /// `https://`: TLS to the upstream, default port 443.
    pub tls: bool,
    /// The whole URL when it has variables (`host`, `port`, `uri` are then unused): it is
    /// evaluated per request.
    pub vars: Option<Template>,
    pub origin: Origin,
}

/// What one level wrote; `None` means "not written here".
#[derive(Debug, Clone, Default)]
pub(crate) struct Level {
    pub proxy_pass: Option<PassRaw>,
    pub proxy_set_header: Option<Vec<(String, Template)>>,
    pub proxy_http_version: Option<String>,
    pub proxy_method: Option<Template>,
    /// `proxy_bind`; `Some(None)` is `off`.
    pub proxy_bind: Option<Option<crate::model::ProxyBind>>,
    pub proxy_pass_request_headers: Option<bool>,
    pub proxy_pass_request_body: Option<bool>,
    pub proxy_ignore_client_abort: Option<bool>,
    pub proxy_set_body: Option<Template>,
    pub proxy_connect_timeout: Option<Duration>,
    pub proxy_read_timeout: Option<Duration>,
    pub proxy_send_timeout: Option<Duration>,
    pub proxy_next_upstream: Option<NextUpstream>,
    pub proxy_next_upstream_tries: Option<u32>,
    /// `proxy_next_upstream_budget`; `Some(None)` is `off`.
    pub proxy_next_upstream_budget: Option<Option<crate::retry_budget::RetryBudget>>,
    pub proxy_next_upstream_timeout: Option<Duration>,
    /// The rewrite module's directives written at this level, in order (never inherited).
    pub rewrite: Vec<RewriteOp>,
    pub rewrite_log: Option<bool>,
    /// The configurations of this level's `if` blocks (`If::config` indexes them).
    pub if_levels: Vec<Level>,
    pub error_pages: Option<Vec<ErrorPage>>,
    pub errors: crate::error_pages::ErrorLevel,
    /// `limit_except` of this location (never inherited, as nginx).
    pub limit_except: Option<Box<crate::limit_except::LimitLevel>>,
    pub root: Option<PathBuf>,
    /// `alias`, `index`, `types`, `default_type` (files.rs).
    pub files: crate::files::FilesLevel,
    pub access_log: Option<Vec<AccessLog>>,
    pub keepalive_timeout: Option<Duration>,
    pub keepalive_requests: Option<u64>,
    pub keepalive_time: Option<Duration>,
    /// `keepalive_timeout`'s second argument: `Keep-Alive: timeout=N` (merged on its own).
    pub keepalive_header: Option<u64>,
    pub keepalive_disable: Option<crate::model::KeepaliveDisable>,
    pub client_max_body_size: Option<u64>,
    pub client_header_timeout: Option<Duration>,
    pub client_body_timeout: Option<Duration>,
    pub send_timeout: Option<Duration>,
    pub limit_rate: Option<SizeValue>,
    pub limit_rate_after: Option<SizeValue>,
    pub proxy_limit_rate: Option<u64>,
    pub large_client_header_buffers: Option<(usize, usize)>,
    pub access_rules: Option<Vec<AccessRule>>,
    pub add_headers: Option<Vec<AddHeader>>,
    pub add_trailers: Option<Vec<AddHeader>>,
    pub chunked_transfer_encoding: Option<bool>,
    pub underscores_in_headers: Option<bool>,
    pub ignore_invalid_headers: Option<bool>,
    pub max_headers: Option<usize>,
    pub merge_slashes: Option<bool>,
    pub proxy_socket_keepalive: Option<bool>,
    pub lingering_close: Option<crate::model::LingeringClose>,
    pub lingering_time: Option<Duration>,
    pub lingering_timeout: Option<Duration>,
    pub server_tokens: Option<ServerTokens>,
    /// `ssl_*` (http and server level; the server's merged ones are its TLS settings).
    pub ssl: crate::ssl::SslLevel,
    pub proxy_ssl: crate::ssl::ProxySslLevel,
    /// `gzip` and `gzip_*` (gzip.rs).
    pub gzip: crate::gzip::GzipLevel,
    /// `limit_req*`, `limit_conn*` (limits.rs).
    pub limits: crate::limits::LimitsLevel,
    /// `set_real_ip_from`, `real_ip_header`, `real_ip_recursive` (realip.rs).
    pub realip: crate::realip::RealIpLevel,
    /// `auth_basic*`, `satisfy`, `auth_delay` (auth_basic.rs).
    pub access: crate::auth_basic::AccessLevel,
    /// `resolver`, `resolver_timeout` (resolver.rs).
    pub resolver: crate::resolver::ResolverLevel,
    /// `proxy_request_buffering`, `client_body_*` (request_body.rs).
    pub request_body: crate::request_body::RequestBodyLevel,
    /// `proxy_hide_header`, `proxy_redirect`, `proxy_cookie_*`... (proxy_headers.rs).
    pub proxy_headers: crate::proxy_headers::ProxyHeadersLevel,
}

const MINUTE: Duration = Duration::from_secs(60);

/// nginx's defaults (HTTP/1.0 to upstreams among them), with ringfront's choices where the
/// model documents one: no access log unless one is written (nginx writes `logs/access.log`).
/// `root` is `html`, which the loader makes relative to the configuration's folder.
impl Default for LocationSettings {
    fn default() -> Self {
        LocationSettings {
            proxy_pass: None,
            proxy_set_header: Vec::new(),
            proxy_http_version: "1.0".to_string(),
            proxy_method: None,
            proxy_bind: None,
            proxy_pass_request_headers: true,
            proxy_pass_request_body: true,
            proxy_ignore_client_abort: false,
            proxy_set_body: None,
            proxy_connect_timeout: MINUTE,
            proxy_read_timeout: MINUTE,
            proxy_send_timeout: MINUTE,
            proxy_next_upstream: NextUpstream::default(),
            proxy_next_upstream_tries: 0,
            proxy_next_upstream_budget: None,
            proxy_next_upstream_timeout: Duration::ZERO,
            rewrite: Vec::new(),
            rewrite_log: false,
            if_settings: Vec::new(),
            error_pages: Vec::new(),
            errors: Default::default(),
            limit_except: None,
            root: PathBuf::from("html"),
            files: Default::default(),
            access_log: Vec::new(),
            keepalive_timeout: Duration::from_secs(75),
            keepalive_requests: 1000,
            keepalive_time: Duration::from_secs(3600),
            keepalive_header: 0,
            keepalive_disable: crate::model::KeepaliveDisable::MSIE6,
            client_max_body_size: 1 << 20,
            client_header_timeout: MINUTE,
            client_body_timeout: MINUTE,
            send_timeout: MINUTE,
            limit_rate: SizeValue::Fixed(0),
            limit_rate_after: SizeValue::Fixed(0),
            proxy_limit_rate: 0,
            large_client_header_buffers: (4, 8 << 10),
            access_rules: Vec::new(),
            add_headers: Vec::new(),
            add_trailers: Vec::new(),
            chunked_transfer_encoding: true,
            underscores_in_headers: false,
            ignore_invalid_headers: true,
            max_headers: 1000,
            merge_slashes: true,
            proxy_socket_keepalive: false,
            lingering_close: crate::model::LingeringClose::On,
            lingering_time: Duration::from_secs(30),
            lingering_timeout: Duration::from_secs(5),
            server_tokens: ServerTokens::On,
            check_status: None,
            api: false,
            api_write: false,
            stub_status: false,
            internal: false,
            proxy_ssl: Default::default(),
            gzip: None,
            limits: Default::default(),
            real_ip: None,
            request_body: Default::default(),
            proxy_headers: Default::default(),
            resolver: Default::default(),
            access: Default::default(),
        }
    }
}

impl Level {
    /// This level with everything it did not write taken from `outer`. `proxy_pass` and
    /// the rewrite directives are not inherited (nginx: the proxy handler and rewrite codes
    /// belong to the level that wrote them); a server's run before location selection.
    pub(crate) fn inherit(&self, outer: &Level) -> Level {
        fn pick<T: Clone>(own: &Option<T>, outer: &Option<T>) -> Option<T> {
            own.clone().or_else(|| outer.clone())
        }
        Level {
            proxy_pass: self.proxy_pass.clone(),
            proxy_set_header: pick(&self.proxy_set_header, &outer.proxy_set_header),
            proxy_http_version: pick(&self.proxy_http_version, &outer.proxy_http_version),
            proxy_method: pick(&self.proxy_method, &outer.proxy_method),
            proxy_bind: pick(&self.proxy_bind, &outer.proxy_bind),
            proxy_pass_request_headers: pick(
                &self.proxy_pass_request_headers,
                &outer.proxy_pass_request_headers,
            ),
            proxy_pass_request_body: pick(
                &self.proxy_pass_request_body,
                &outer.proxy_pass_request_body,
            ),
            proxy_ignore_client_abort: pick(
                &self.proxy_ignore_client_abort,
                &outer.proxy_ignore_client_abort,
            ),
            proxy_set_body: pick(&self.proxy_set_body, &outer.proxy_set_body),
            proxy_connect_timeout: pick(&self.proxy_connect_timeout, &outer.proxy_connect_timeout),
            proxy_read_timeout: pick(&self.proxy_read_timeout, &outer.proxy_read_timeout),
            proxy_send_timeout: pick(&self.proxy_send_timeout, &outer.proxy_send_timeout),
            proxy_next_upstream: pick(&self.proxy_next_upstream, &outer.proxy_next_upstream),
            proxy_next_upstream_tries: pick(
                &self.proxy_next_upstream_tries,
                &outer.proxy_next_upstream_tries,
            ),
            proxy_next_upstream_budget: pick(
                &self.proxy_next_upstream_budget,
                &outer.proxy_next_upstream_budget,
            ),
            proxy_next_upstream_timeout: pick(
                &self.proxy_next_upstream_timeout,
                &outer.proxy_next_upstream_timeout,
            ),
            rewrite: self.rewrite.clone(),
            rewrite_log: pick(&self.rewrite_log, &outer.rewrite_log),
            if_levels: self.if_levels.clone(),
            error_pages: pick(&self.error_pages, &outer.error_pages),
            errors: self.errors.inherit(&outer.errors),
            limit_except: self.limit_except.clone(),
            root: pick(&self.root, &outer.root),
            files: self.files.inherit(&outer.files),
            access_log: pick(&self.access_log, &outer.access_log),
            keepalive_timeout: pick(&self.keepalive_timeout, &outer.keepalive_timeout),
            keepalive_requests: pick(&self.keepalive_requests, &outer.keepalive_requests),
            keepalive_time: pick(&self.keepalive_time, &outer.keepalive_time),
            keepalive_header: pick(&self.keepalive_header, &outer.keepalive_header),
            keepalive_disable: pick(&self.keepalive_disable, &outer.keepalive_disable),
            client_max_body_size: pick(&self.client_max_body_size, &outer.client_max_body_size),
            client_header_timeout: pick(&self.client_header_timeout, &outer.client_header_timeout),
            client_body_timeout: pick(&self.client_body_timeout, &outer.client_body_timeout),
            send_timeout: pick(&self.send_timeout, &outer.send_timeout),
            limit_rate: pick(&self.limit_rate, &outer.limit_rate),
            limit_rate_after: pick(&self.limit_rate_after, &outer.limit_rate_after),
            proxy_limit_rate: pick(&self.proxy_limit_rate, &outer.proxy_limit_rate),
            large_client_header_buffers: pick(
                &self.large_client_header_buffers,
                &outer.large_client_header_buffers,
            ),
            access_rules: pick(&self.access_rules, &outer.access_rules),
            add_headers: pick(&self.add_headers, &outer.add_headers),
            add_trailers: pick(&self.add_trailers, &outer.add_trailers),
            chunked_transfer_encoding: pick(
                &self.chunked_transfer_encoding,
                &outer.chunked_transfer_encoding,
            ),
            underscores_in_headers: pick(
                &self.underscores_in_headers,
                &outer.underscores_in_headers,
            ),
            ignore_invalid_headers: pick(
                &self.ignore_invalid_headers,
                &outer.ignore_invalid_headers,
            ),
            max_headers: pick(&self.max_headers, &outer.max_headers),
            merge_slashes: pick(&self.merge_slashes, &outer.merge_slashes),
            proxy_socket_keepalive: pick(
                &self.proxy_socket_keepalive,
                &outer.proxy_socket_keepalive,
            ),
            lingering_close: pick(&self.lingering_close, &outer.lingering_close),
            lingering_time: pick(&self.lingering_time, &outer.lingering_time),
            lingering_timeout: pick(&self.lingering_timeout, &outer.lingering_timeout),
            server_tokens: pick(&self.server_tokens, &outer.server_tokens),
            ssl: self.ssl.inherit(&outer.ssl),
            proxy_ssl: self.proxy_ssl.inherit(&outer.proxy_ssl),
            gzip: self.gzip.inherit(&outer.gzip),
            limits: self.limits.inherit(&outer.limits),
            realip: self.realip.inherit(&outer.realip),
            access: self.access.inherit(&outer.access),
            resolver: self.resolver.inherit(&outer.resolver),
            request_body: self.request_body.inherit(&outer.request_body),
            proxy_headers: self.proxy_headers.inherit(&outer.proxy_headers),
        }
    }

    /// The complete settings: defaults for whatever no level wrote.
    pub(crate) fn finish(
        self,
        prefix: &Path,
        proxy_pass: Option<ProxyPass>,
    ) -> Result<LocationSettings, crate::error::ConfigError> {
        let http11 = self.proxy_http_version.as_deref() == Some("1.1");
        let d = LocationSettings::default();
        let tls = proxy_pass.as_ref().is_some_and(|p| p.tls);
        let proxy_ssl = self.proxy_ssl.finish(tls)?;
        Ok(LocationSettings {
            proxy_pass,
            proxy_set_header: self.proxy_set_header.unwrap_or(d.proxy_set_header),
            proxy_http_version: self.proxy_http_version.unwrap_or(d.proxy_http_version),
            proxy_method: self.proxy_method.or(d.proxy_method),
            proxy_bind: self.proxy_bind.unwrap_or(d.proxy_bind),
            proxy_pass_request_headers: self
                .proxy_pass_request_headers
                .unwrap_or(d.proxy_pass_request_headers),
            proxy_pass_request_body: self
                .proxy_pass_request_body
                .unwrap_or(d.proxy_pass_request_body),
            proxy_ignore_client_abort: self
                .proxy_ignore_client_abort
                .unwrap_or(d.proxy_ignore_client_abort),
            proxy_set_body: self.proxy_set_body.or(d.proxy_set_body),
            proxy_connect_timeout: self
                .proxy_connect_timeout
                .unwrap_or(d.proxy_connect_timeout),
            proxy_read_timeout: self.proxy_read_timeout.unwrap_or(d.proxy_read_timeout),
            proxy_send_timeout: self.proxy_send_timeout.unwrap_or(d.proxy_send_timeout),
            proxy_next_upstream: self.proxy_next_upstream.unwrap_or(d.proxy_next_upstream),
            proxy_next_upstream_tries: self
                .proxy_next_upstream_tries
                .unwrap_or(d.proxy_next_upstream_tries),
            proxy_next_upstream_budget: self
                .proxy_next_upstream_budget
                .unwrap_or(d.proxy_next_upstream_budget),
            proxy_next_upstream_timeout: self
                .proxy_next_upstream_timeout
                .unwrap_or(d.proxy_next_upstream_timeout),
            rewrite: self.rewrite,
            rewrite_log: self.rewrite_log.unwrap_or(d.rewrite_log),
            if_settings: Vec::new(),
            error_pages: self.error_pages.unwrap_or(d.error_pages),
            errors: self.errors.finish(),
            // resolve.rs finishes the block's settings (its proxy_pass is looked up there).
            limit_except: None,
            root: self.root.unwrap_or_else(|| prefix.join(d.root)),
            files: self.files.finish(),
            access_log: self.access_log.unwrap_or(d.access_log),
            keepalive_timeout: self.keepalive_timeout.unwrap_or(d.keepalive_timeout),
            keepalive_requests: self.keepalive_requests.unwrap_or(d.keepalive_requests),
            keepalive_time: self.keepalive_time.unwrap_or(d.keepalive_time),
            keepalive_header: self.keepalive_header.unwrap_or(d.keepalive_header),
            keepalive_disable: self.keepalive_disable.unwrap_or(d.keepalive_disable),
            client_max_body_size: self.client_max_body_size.unwrap_or(d.client_max_body_size),
            client_header_timeout: self
                .client_header_timeout
                .unwrap_or(d.client_header_timeout),
            client_body_timeout: self.client_body_timeout.unwrap_or(d.client_body_timeout),
            send_timeout: self.send_timeout.unwrap_or(d.send_timeout),
            limit_rate: self.limit_rate.unwrap_or(d.limit_rate),
            limit_rate_after: self.limit_rate_after.unwrap_or(d.limit_rate_after),
            proxy_limit_rate: self.proxy_limit_rate.unwrap_or(d.proxy_limit_rate),
            large_client_header_buffers: self
                .large_client_header_buffers
                .unwrap_or(d.large_client_header_buffers),
            access_rules: self.access_rules.unwrap_or(d.access_rules),
            add_headers: self.add_headers.unwrap_or(d.add_headers),
            add_trailers: self.add_trailers.unwrap_or(d.add_trailers),
            chunked_transfer_encoding: self
                .chunked_transfer_encoding
                .unwrap_or(d.chunked_transfer_encoding),
            underscores_in_headers: self
                .underscores_in_headers
                .unwrap_or(d.underscores_in_headers),
            ignore_invalid_headers: self
                .ignore_invalid_headers
                .unwrap_or(d.ignore_invalid_headers),
            max_headers: self.max_headers.unwrap_or(d.max_headers),
            merge_slashes: self.merge_slashes.unwrap_or(d.merge_slashes),
            proxy_socket_keepalive: self
                .proxy_socket_keepalive
                .unwrap_or(d.proxy_socket_keepalive),
            lingering_close: self.lingering_close.unwrap_or(d.lingering_close),
            lingering_time: self.lingering_time.unwrap_or(d.lingering_time),
            lingering_timeout: self.lingering_timeout.unwrap_or(d.lingering_timeout),
            server_tokens: self.server_tokens.unwrap_or(d.server_tokens),
            check_status: None,
            api: false,
            api_write: false,
            stub_status: false,
            internal: false,
            proxy_ssl,
            gzip: self.gzip.finish(),
            limits: self.limits.finish(),
            real_ip: self.realip.finish(),
            access: self.access.finish(),
            resolver: self.resolver.finish(),
            request_body: self.request_body.finish(prefix, http11),
            proxy_headers: self.proxy_headers.finish(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn child_wins_parent_fills_defaults_last() {
        let http = Level {
            proxy_read_timeout: Some(Duration::from_secs(5)),
            proxy_connect_timeout: Some(Duration::from_secs(1)),
            access_log: Some(vec![AccessLog::Off]),
            ..Level::default()
        };
        let server = Level {
            proxy_read_timeout: Some(Duration::from_secs(9)),
            ..Level::default()
        };
        let s = server
            .inherit(&http)
            .finish(Path::new("/etc/rf"), None)
            .unwrap();
        assert_eq!(s.proxy_read_timeout, Duration::from_secs(9));
        assert_eq!(s.proxy_connect_timeout, Duration::from_secs(1));
        assert_eq!(s.proxy_send_timeout, MINUTE);
        assert_eq!(s.access_log, vec![AccessLog::Off]);
        assert_eq!(s.root, PathBuf::from("/etc/rf/html"));
    }

    #[test]
    fn rewrite_directives_are_not_inherited() {
        let outer = Level {
            rewrite: vec![RewriteOp::Break],
            rewrite_log: Some(true),
            ..Level::default()
        };
        let inner = Level::default().inherit(&outer);
        assert!(inner.rewrite.is_empty());
        assert_eq!(inner.rewrite_log, Some(true));
    }
}
