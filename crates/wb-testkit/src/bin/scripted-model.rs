//! Runs the scripted model server by hand: `scripted-model SCRIPT.json [LOG.jsonl]`. SCRIPT is a JSON
//! array of turns (`{"text": …, "tool_calls": [{"name": …, "arguments": {…}}], "hang": false}`). Prints
//! the URL, then appends every request to LOG (or stderr) as JSON lines until killed.

use std::io::Write;

use wb_testkit::{ModelServer, Turn};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(script) = args.next() else {
        eprintln!("usage: scripted-model SCRIPT.json [LOG.jsonl]");
        std::process::exit(2);
    };
    let turns: Vec<Turn> = match std::fs::read_to_string(&script).map(|t| serde_json::from_str(&t)) {
        Ok(Ok(turns)) => turns,
        Ok(Err(e)) => {
            eprintln!("{script}: {e}");
            std::process::exit(2);
        }
        Err(e) => {
            eprintln!("{script}: {e}");
            std::process::exit(2);
        }
    };
    let log = args.next();
    let server = match ModelServer::start(turns) {
        Ok(server) => server,
        Err(e) => {
            eprintln!("cannot listen: {e}");
            std::process::exit(1);
        }
    };
    println!("{}", server.url());
    let _ = std::io::stdout().flush();
    let mut seen = 0;
    loop {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let requests = server.requests();
        for request in &requests[seen..] {
            let line = serde_json::to_string(request).unwrap_or_default();
            match &log {
                Some(path) => {
                    if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
                        let _ = writeln!(file, "{line}");
                    }
                }
                None => eprintln!("{line}"),
            }
        }
        seen = requests.len();
    }
}
