//! Writes to the client under `limit_rate` (rate_limit.rs's rule): a buffer goes out in the
//! pieces the rule allows, with the waits it asks for. Without a pacer it is `write_all`.

use std::time::Duration;

use monoio::buf::IoBuf;
use monoio::buf::IoBufMut;
use monoio::io::{AsyncReadRent, AsyncWriteRentExt};

use ringfront_config::SizeValue;

use crate::io::{read_more, write_all, IoFail};
use crate::rate_limit::{Allow, Pacer};
use crate::req::Cx;

/// `write_all`, paced by `pacer` when there is one; `limit` bounds each piece's write. A
/// client that closes during a wait ends it (client_gone.rs).
pub async fn write_paced(
    s: &mut crate::stream::ClientStream,
    buf: Vec<u8>,
    limit: Duration,
    pacer: Option<&mut Pacer>,
) -> (Result<(), IoFail>, Vec<u8>) {
    let Some(pacer) = pacer else {
        return write_all(s, buf, limit).await;
    };
    let mut buf = buf;
    let mut pos = 0;
    while pos < buf.len() {
        let now = crate::clock::now_ms();
        let n = match pacer.allow(now) {
            Allow::Wait(ms) => {
                let wait = Duration::from_millis(ms);
                // Boxed: a monoio timer is 640 bytes aligned to 128, which every response's
                // future would carry inline for this pause of `limit_rate` alone.
                if Box::pin(crate::client_gone::sleep_unless_gone(s, wait)).await {
                    return (Err(IoFail::Io(crate::client_gone::gone())), buf);
                }
                continue;
            }
            Allow::Send(n) => usize::try_from(n).unwrap_or(usize::MAX),
        };
        let end = pos + n.min(buf.len() - pos);
        match crate::deadline::timeout(limit, s.write_all(buf.slice(pos..end))).await {
            Ok((Ok(_), b)) => buf = b.into_inner(),
            Ok((Err(e), b)) => return (Err(IoFail::Io(e)), b.into_inner()),
            Err(_) => return (Err(IoFail::Timeout), Vec::new()),
        }
        pacer.wrote((end - pos) as u64, crate::clock::now_ms());
        pos = end;
    }
    (Ok(()), buf)
}

/// This request's `limit_rate` pacer: `set $limit_rate`'s rate, else the location's
/// `limit_rate` (its variables read now, as nginx's write filter reads them once), after
/// `limit_rate_after`. `None`, at the cost of a comparison, when the rate is 0.
pub fn pacer(cx: &Cx<'_>) -> Option<Pacer> {
    let s = cx.settings();
    let set = cx.req.rw.and_then(|rw| rw.limit_rate);
    if set.is_none() && s.limit_rate == SizeValue::Fixed(0) {
        return None;
    }
    let rate = set.unwrap_or_else(|| size(cx, &s.limit_rate));
    if rate == 0 {
        return None;
    }
    Pacer::new(rate, size(cx, &s.limit_rate_after), start_ms(cx))
}

/// The pacer of a relayed response: the upstream's `X-Accel-Limit-Rate` (a number, unless
/// `proxy_ignore_headers` names it) sets the rate, as nginx; otherwise [`pacer`].
pub fn relayed_pacer(cx: &Cx<'_>, accel: Option<&[u8]>) -> Option<Pacer> {
    let number = accel
        .filter(|v| !v.is_empty() && v.iter().all(u8::is_ascii_digit))
        .and_then(|v| std::str::from_utf8(v).ok()?.parse::<u64>().ok());
    match number {
        Some(rate) => Pacer::new(
            rate,
            size(cx, &cx.settings().limit_rate_after),
            start_ms(cx),
        ),
        None => pacer(cx),
    }
}

/// The `proxy_limit_rate` pacer of the upstream reads (nginx's event pipe: the bytes read
/// against the rate since the response started); `None` without the directive.
pub fn upstream_pacer(cx: &Cx<'_>) -> Option<Pacer> {
    let rate = cx.settings().proxy_limit_rate;
    (rate > 0)
        .then(|| Pacer::new(rate, 0, crate::clock::now_ms()))
        .flatten()
}

/// `read_more` of up to `spare` bytes, under `proxy_limit_rate` when `pacer` is one: it
/// waits until the rate allows a read, takes no more than allowed and counts what came.
pub async fn read_paced<S: AsyncReadRent>(
    s: &mut S,
    mut buf: Vec<u8>,
    spare: usize,
    limit: Duration,
    pacer: Option<&mut Pacer>,
) -> (Result<usize, IoFail>, Vec<u8>) {
    let Some(pacer) = pacer else {
        return read_more(s, buf, spare, limit).await;
    };
    let room = loop {
        match pacer.allow(crate::clock::now_ms()) {
            // Boxed, as in `write_paced`.
            Allow::Wait(ms) => Box::pin(monoio::time::sleep(Duration::from_millis(ms))).await,
            Allow::Send(n) => break usize::try_from(n).map_or(spare, |n| n.min(spare)),
        }
    };
    buf.reserve(room);
    let len = buf.len();
    let r = match crate::deadline::timeout(limit, s.read(buf.slice_mut(len..len + room))).await {
        Ok((Ok(n), slice)) => (Ok(n), slice.into_inner()),
        Ok((Err(e), slice)) => (Err(IoFail::Io(e)), slice.into_inner()),
        Err(_) => (Err(IoFail::Timeout), Vec::new()),
    };
    if let Ok(n) = r.0 {
        pacer.wrote(n as u64, crate::clock::now_ms());
    }
    r
}

/// A size setting's value for this request: a constant, or its variables read as a size
/// (0 when they are not one, as `ngx_http_complex_value_size`).
fn size(cx: &Cx<'_>, value: &SizeValue) -> u64 {
    match value {
        SizeValue::Fixed(n) => *n,
        SizeValue::Vars(t) => {
            let mut out = Vec::new();
            crate::vars::render(&mut out, t, &cx.req.vars("", None, Some(cx.snap)), false);
            std::str::from_utf8(&out)
                .ok()
                .and_then(ringfront_config::parse_size)
                .unwrap_or(0)
        }
    }
}

/// The request's start on `clock::now_ms`'s scale (nginx's `r->start_sec`).
fn start_ms(cx: &Cx<'_>) -> u64 {
    let age = u64::try_from(cx.req.start.elapsed().as_millis()).unwrap_or(u64::MAX);
    crate::clock::now_ms().saturating_sub(age)
}
