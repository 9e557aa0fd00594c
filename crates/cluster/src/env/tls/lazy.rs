//! An accepted TLS stream whose handshake runs when it is first read or
//! written, so the listener hands it out at once and the handshake happens
//! in the connection's task, under its handshake timeout.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::server::TlsStream;
use tokio_rustls::Accept;

use crate::env::BoxStream;

enum State {
    Handshaking(Box<Accept<BoxStream>>),
    Ready(Box<TlsStream<BoxStream>>),
    Failed,
}

pub struct LazyServerTls {
    state: State,
}

impl LazyServerTls {
    pub fn new(accept: Accept<BoxStream>) -> Self {
        LazyServerTls {
            state: State::Handshaking(Box::new(accept)),
        }
    }

    /// Drives the handshake; the stream once it is done.
    fn poll_stream(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<&mut TlsStream<BoxStream>>> {
        if let State::Handshaking(accept) = &mut self.state {
            match ready!(Pin::new(&mut **accept).poll(cx)) {
                Ok(stream) => self.state = State::Ready(Box::new(stream)),
                Err(e) => {
                    self.state = State::Failed;
                    return Poll::Ready(Err(e));
                }
            }
        }
        match &mut self.state {
            State::Ready(stream) => Poll::Ready(Ok(stream)),
            _ => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "the TLS handshake failed",
            ))),
        }
    }
}

impl AsyncRead for LazyServerTls {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let stream = ready!(self.get_mut().poll_stream(cx))?;
        Pin::new(stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for LazyServerTls {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let stream = ready!(self.get_mut().poll_stream(cx))?;
        Pin::new(stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let stream = ready!(self.get_mut().poll_stream(cx))?;
        Pin::new(stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let stream = ready!(self.get_mut().poll_stream(cx))?;
        Pin::new(stream).poll_shutdown(cx)
    }
}
