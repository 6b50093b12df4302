//! Shared inputs for ringfront's criterion micro-benchmarks (`cargo bench -p
//! ringfront-benches`): the request and response heads and bodies the hot paths see.

/// The request wrk sends (`wrk http://127.0.0.1:18081/`).
pub const WRK_GET: &[u8] = b"GET / HTTP/1.1\r\nHost: 127.0.0.1:18081\r\n\r\n";

/// A browser-like navigation request: 15 header fields, cookies, client hints.
pub const BROWSER_GET: &[u8] = b"GET /articles/2024/ringfront-benchmarks?utm_source=feed&ref=home HTTP/1.1\r\n\
Host: www.example.com\r\n\
User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36\r\n\
Accept: text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8\r\n\
Accept-Language: en-US,en;q=0.9,de;q=0.8\r\n\
Accept-Encoding: gzip, deflate, br, zstd\r\n\
Referer: https://www.example.com/\r\n\
Connection: keep-alive\r\n\
Cookie: session=3f9a1c2b7d8e4f60a1b2c3d4e5f60718; theme=dark; _ga=GA1.2.1234567890.1700000000\r\n\
Upgrade-Insecure-Requests: 1\r\n\
Sec-Fetch-Dest: document\r\n\
Sec-Fetch-Mode: navigate\r\n\
Sec-Fetch-Site: same-origin\r\n\
Sec-Fetch-User: ?1\r\n\
Sec-Ch-Ua: \"Chromium\";v=\"124\", \"Google Chrome\";v=\"124\", \"Not-A.Brand\";v=\"99\"\r\n\
Cache-Control: max-age=0\r\n\
\r\n";

/// A typical upstream response head (what nginx answers for a small static body).
pub const RESPONSE_HEAD: &[u8] = b"HTTP/1.1 200 OK\r\n\
Server: nginx/1.22.1\r\n\
Date: Mon, 01 Jan 2024 00:00:00 GMT\r\n\
Content-Type: text/html; charset=utf-8\r\n\
Content-Length: 612\r\n\
Last-Modified: Tue, 21 Nov 2023 10:00:00 GMT\r\n\
Connection: keep-alive\r\n\
ETag: \"655c8040-264\"\r\n\
Cache-Control: public, max-age=3600\r\n\
Accept-Ranges: bytes\r\n\
\r\n";

/// A chunked body carrying `payload` bytes in chunks of `chunk` bytes, then the last
/// chunk and the final CRLF.
pub fn chunked_body(payload: usize, chunk: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload + payload / chunk.max(1) * 8 + 16);
    let mut left = payload;
    while left > 0 {
        let n = left.min(chunk.max(1));
        out.extend_from_slice(format!("{n:x}\r\n").as_bytes());
        out.extend(std::iter::repeat_n(b'x', n));
        out.extend_from_slice(b"\r\n");
        left -= n;
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// A 64 KiB HTML page as a CMS renders it (repeated markup with varying text), the body the
/// gzip bench compresses.
pub fn html_body(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n + 256);
    out.extend_from_slice(b"<!doctype html><html><head><title>Articles</title></head><body><ul>\n");
    let mut i = 1u64;
    while out.len() < n {
        let line = format!(
            "<li class=\"article\" data-id=\"{i}\"><a href=\"/articles/{}/{}\">Article {} about \
             upstream number {}</a><span class=\"date\">2024-0{}-1{}</span></li>\n",
            i * 7919 % 10_007,
            i % 97,
            i,
            i * 31 % 113,
            i % 9 + 1,
            i % 10
        );
        out.extend_from_slice(line.as_bytes());
        i += 1;
    }
    out.truncate(n);
    out
}

/// A 64 KiB JSON API answer (an array of records).
pub fn json_body(n: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(n + 256);
    out.push(b'[');
    let mut i = 1u64;
    while out.len() < n {
        let rec = format!(
            "{{\"id\":{i},\"name\":\"peer-{}\",\"weight\":{},\"healthy\":{},\"latency_ms\":{}.{}}},",
            i * 2654435761 % 65_521,
            i % 5 + 1,
            !i.is_multiple_of(7),
            i * 13 % 400,
            i % 10
        );
        out.extend_from_slice(rec.as_bytes());
        i += 1;
    }
    out.truncate(n);
    out
}
