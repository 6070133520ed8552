//! A deliberately small HTTP/1.1 server for loopback test doubles: one request per connection
//! (`Connection: close`), bodies by `Content-Length` or chunked, responses written and flushed as they are
//! produced so streams (server-sent events) reach the client piece by piece.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// The largest request body accepted (runners send whole conversations; 64 MiB is plenty).
const MAX_BODY: usize = 64 << 20;

/// One parsed request.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    /// Header names in lower case, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }
}

/// Where a handler writes its answer.
pub struct Responder<'a> {
    stream: &'a mut TcpStream,
    started: bool,
    stop: &'a AtomicBool,
}

impl Responder<'_> {
    /// A complete response with a body.
    pub fn send(&mut self, status: u16, content_type: &str, body: &[u8]) -> std::io::Result<()> {
        self.started = true;
        let head = format!(
            "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            reason(status),
            body.len()
        );
        self.stream.write_all(head.as_bytes())?;
        self.stream.write_all(body)?;
        self.stream.flush()
    }

    pub fn json(&mut self, status: u16, value: &serde_json::Value) -> std::io::Result<()> {
        self.send(status, "application/json", value.to_string().as_bytes())
    }

    /// Starts a server-sent event stream; the body ends when the connection closes.
    pub fn start_events(&mut self) -> std::io::Result<()> {
        self.started = true;
        self.stream.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n",
        )?;
        self.stream.flush()
    }

    /// One event (`event:` line only when `name` is given).
    pub fn event(&mut self, name: Option<&str>, data: &str) -> std::io::Result<()> {
        let mut text = String::new();
        if let Some(name) = name {
            text.push_str(&format!("event: {name}\n"));
        }
        for line in data.lines() {
            text.push_str(&format!("data: {line}\n"));
        }
        text.push('\n');
        self.stream.write_all(text.as_bytes())?;
        self.stream.flush()
    }

    /// Keeps the connection open without sending anything until the client goes away, the server stops
    /// or `limit` passes.
    pub fn hang(&mut self, limit: Duration) {
        let _ = self.stream.set_read_timeout(Some(Duration::from_millis(50)));
        let deadline = std::time::Instant::now() + limit;
        let mut byte = [0u8; 1];
        while std::time::Instant::now() < deadline && !self.stop.load(Ordering::SeqCst) {
            match self.stream.read(&mut byte) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
                Err(_) => return,
            }
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Payload Too Large",
        _ => "Status",
    }
}

pub type Handler = dyn Fn(&Request, &mut Responder<'_>) -> std::io::Result<()> + Send + Sync;

/// A running server; stops (and unblocks its accept loop) when dropped.
pub struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds 127.0.0.1 on a free port (or `port` when given).
    pub fn start(port: u16, handler: Arc<Handler>) -> std::io::Result<Server> {
        Server::start_on(IpAddr::from([127, 0, 0, 1]), port, handler)
    }

    /// Binds `ip` (a local address: loopback, or a container bridge's gateway so containers reach it).
    pub fn start_on(ip: IpAddr, port: u16, handler: Arc<Handler>) -> std::io::Result<Server> {
        let listener = TcpListener::bind((ip, port))?;
        let addr = listener.local_addr()?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if flag.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let handler = handler.clone();
                let flag = flag.clone();
                std::thread::spawn(move || serve(stream, &*handler, &flag));
            }
        });
        Ok(Server { addr, stop, accept: Some(accept) })
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
    }
}

fn serve(mut stream: TcpStream, handler: &Handler, stop: &AtomicBool) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let request = match read_request(&mut stream) {
        Ok(Some(request)) => request,
        Ok(None) => return,
        Err(message) => {
            let mut responder = Responder { stream: &mut stream, started: false, stop };
            let _ = responder.send(400, "text/plain", message.as_bytes());
            return;
        }
    };
    let mut responder = Responder { stream: &mut stream, started: false, stop };
    let result = handler(&request, &mut responder);
    if result.is_ok() && !responder.started {
        let _ = responder.send(404, "text/plain", b"not found");
    }
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

fn read_request(stream: &mut TcpStream) -> Result<Option<Request>, String> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(path)) = (parts.next(), parts.next()) else {
        return Err("bad request line".to_owned());
    };
    let (method, path) = (method.to_owned(), path.to_owned());
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).map_err(|e| e.to_string())? == 0 {
            break;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let find = |name: &str| headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone());
    let mut body = Vec::new();
    if find("transfer-encoding").is_some_and(|v| v.to_ascii_lowercase().contains("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).map_err(|e| e.to_string())?;
            let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16)
                .map_err(|_| "bad chunk size".to_owned())?;
            if size == 0 {
                let mut end = String::new();
                let _ = reader.read_line(&mut end);
                break;
            }
            if body.len().checked_add(size).is_none_or(|total| total > MAX_BODY) {
                return Err("body too large".to_owned());
            }
            let start = body.len();
            body.resize(start + size, 0);
            reader.read_exact(&mut body[start..]).map_err(|e| e.to_string())?;
            let mut crlf = [0u8; 2];
            reader.read_exact(&mut crlf).map_err(|e| e.to_string())?;
        }
    } else if let Some(length) = find("content-length") {
        let length: usize = length.parse().map_err(|_| "bad content-length".to_owned())?;
        if length > MAX_BODY {
            return Err("body too large".to_owned());
        }
        body.resize(length, 0);
        reader.read_exact(&mut body).map_err(|e| e.to_string())?;
    }
    Ok(Some(Request { method, path, headers, body }))
}
