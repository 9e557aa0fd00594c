//! A reader that hands over, in one read, every decrypted byte a TLS
//! stream already holds.
//!
//! tokio-rustls answers a read with the plaintext of one TLS record at a
//! time, although one socket read may have brought many records in.
//! Drivers send each request as its own record, so the connection loop
//! would see one request per read, run it, and write its answer alone:
//! one encrypted record and one socket write per response, where a plain
//! connection answers a whole burst in one write (`connection::serve`).
//! [`Drain`] reads again while the stream answers at once and the buffer
//! has room, so a burst of records arrives as one burst of requests.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};

/// Wraps a TLS stream's read half; see the module docs.
pub struct Drain<R> {
    inner: R,
}

impl<R> Drain<R> {
    pub fn new(inner: R) -> Drain<R> {
        Drain { inner }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Drain<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let start = buf.filled().len();
        loop {
            let before = buf.filled().len();
            match Pin::new(&mut self.inner).poll_read(cx, buf) {
                Poll::Ready(Ok(())) => {
                    // End of stream (nothing added) or a full buffer: done.
                    if buf.filled().len() == before || buf.remaining() == 0 {
                        return Poll::Ready(Ok(()));
                    }
                }
                // Bytes already handed over are returned first; the error
                // comes again on the next read.
                Poll::Ready(Err(e)) if buf.filled().len() == start => return Poll::Ready(Err(e)),
                Poll::Ready(Err(_)) => return Poll::Ready(Ok(())),
                // Nothing more for now. With bytes in hand, the waker the
                // inner stream registered wakes a task that is not waiting
                // on it any more, which costs one spurious poll at most.
                Poll::Pending if buf.filled().len() > start => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// Hands over one chunk per read, as tokio-rustls hands over one
    /// record, then is pending (or at its end) once the chunks are gone.
    struct Records {
        chunks: Vec<Vec<u8>>,
        end: bool,
        fail: bool,
    }

    impl AsyncRead for Records {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            if self.chunks.is_empty() {
                return match (self.fail, self.end) {
                    (true, _) => Poll::Ready(Err(io::ErrorKind::ConnectionReset.into())),
                    (false, true) => Poll::Ready(Ok(())),
                    (false, false) => Poll::Pending,
                };
            }
            let chunk = self.chunks.remove(0);
            let n = chunk.len().min(buf.remaining());
            buf.put_slice(&chunk[..n]);
            if n < chunk.len() {
                self.chunks.insert(0, chunk[n..].to_vec());
            }
            Poll::Ready(Ok(()))
        }
    }

    fn records(chunks: &[&[u8]], end: bool, fail: bool) -> Drain<Records> {
        let chunks = chunks.iter().map(|c| c.to_vec()).collect();
        Drain::new(Records { chunks, end, fail })
    }

    #[tokio::test]
    async fn every_record_at_hand_comes_in_one_read() {
        let mut r = records(&[b"one", b"two", b"three"], false, false);
        let mut buf = Vec::with_capacity(64);
        let n = r.read_buf(&mut buf).await.unwrap();
        assert_eq!((n, &buf[..]), (11, &b"onetwothree"[..]));
    }

    #[tokio::test]
    async fn a_full_buffer_ends_the_read_and_the_rest_comes_next() {
        let mut r = records(&[b"abcd", b"efgh"], true, false);
        let mut buf = [0u8; 6];
        let n = r.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"abcdef");
        let n = r.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"gh");
        assert_eq!(r.read(&mut buf).await.unwrap(), 0, "then the end");
    }

    #[tokio::test]
    async fn an_error_after_bytes_comes_on_the_next_read() {
        let mut r = records(&[b"last"], false, true);
        let mut buf = [0u8; 16];
        let n = r.read(&mut buf).await.unwrap();
        assert_eq!(&buf[..n], b"last");
        assert!(r.read(&mut buf).await.is_err());
    }
}
