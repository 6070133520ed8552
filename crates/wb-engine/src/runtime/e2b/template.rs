//! E2B templates: named, cached, and built over plain REST as the official SDK (`e2b@2.51.0`,
//! `template/{index,buildApi,utils,dockerfileParser}.ts`) does; neither Docker nor the CLI is needed.
//!
//! - Name: `workbench-<slug≤32>-<first 20 hex of sha256(JSON {runtime:"e2b-v0",name,version,reference})>`.
//!   `reference` is the image (plus the setup shell when there is one), or for a Dockerfile its content and
//!   each COPY step's files hash, so editing the Dockerfile or a copied file gives a new name (a rebuild).
//! - `GET /templates/aliases/{name}`: 200 = cached (create uses the name), 404 = build, 403 = another team
//!   owns the name.
//! - Build: `POST /v3/templates {name}` → `{templateID, buildID}`; per COPY step
//!   `GET /templates/{tid}/files/{filesHash}` → `{present, url}` and, when absent, a `PUT` of a gzip tar to
//!   `url` with an exact `Content-Length`; `POST /v2/templates/{tid}/builds/{bid}` with
//!   `{startCmd?, readyCmd?, steps:[{type,args,force,filesHash?}], force:false, fromImage}`; poll
//!   `GET …/status?logsOffset=N` (`building|waiting|ready|error`), forwarding log lines.
//! - The Dockerfile subset the SDK parses, single stage: RUN, COPY/ADD (`[src,dest,user,""]`), ENV/ARG,
//!   WORKDIR, USER, CMD/ENTRYPOINT (start command, ready after `sleep 20`), with `USER root`/`WORKDIR /`
//!   first and `USER user`/`WORKDIR /home/user` last unless the Dockerfile set them. COPY sources are literal
//!   relative paths that stay within the context after resolving symlinks; the files hash is the SDK's
//!   `calculateFilesHash` (sha256 over `COPY src dest`, then per entry its relative POSIX path, decimal
//!   `st_mode`, size, and content or link target; links are not followed). What a source covers, its hash and
//!   its archive are in `copy.rs`.

use std::path::PathBuf;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::api::{Api, segment};
use super::copy::{files_hash, hex, pack};
use crate::error::{EngineError, Limit, Result};
use crate::runtime::remote::http::Call;
use crate::runtime::remote::provider::{PreparedTemplate, TemplateRequest, TemplateSource};

/// How long a template build may take.
const BUILD_LIMIT: std::time::Duration = std::time::Duration::from_secs(30 * 60);

/// The readiness command the SDK gives a Dockerfile's CMD/ENTRYPOINT (`waitForTimeout(20_000)`).
const READY_AFTER_START: &str = "sleep 20";

/// One build step as the API takes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub kind: String,
    pub args: Vec<String>,
    pub files_hash: Option<String>,
}

impl Step {
    fn new(kind: &str, args: Vec<String>) -> Step {
        Step { kind: kind.to_owned(), args, files_hash: None }
    }

    pub fn to_json(&self) -> Value {
        let mut step = json!({"type": self.kind, "args": self.args, "force": false});
        if let (Some(hash), Some(map)) = (&self.files_hash, step.as_object_mut()) {
            map.insert("filesHash".to_owned(), Value::String(hash.clone()));
        }
        step
    }
}

/// A template to build: its base image, steps and start command, and where COPY sources come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildPlan {
    pub from_image: String,
    pub steps: Vec<Step>,
    pub start_cmd: Option<String>,
    pub ready_cmd: Option<String>,
    pub context: Option<PathBuf>,
    /// The Dockerfile's text (part of the template name).
    pub dockerfile: Option<String>,
}

impl BuildPlan {
    /// The build-start body (`TemplateBuildStartV2`), keys in the SDK's order.
    pub fn body(&self) -> Value {
        let mut body = serde_json::Map::new();
        if let Some(start) = &self.start_cmd {
            body.insert("startCmd".to_owned(), json!(start));
        }
        if let Some(ready) = &self.ready_cmd {
            body.insert("readyCmd".to_owned(), json!(ready));
        }
        body.insert("steps".to_owned(), Value::Array(self.steps.iter().map(Step::to_json).collect()));
        body.insert("force".to_owned(), json!(false));
        body.insert("fromImage".to_owned(), json!(self.from_image));
        Value::Object(body)
    }
}

/// The build plan of a request (reads the Dockerfile and hashes the copied files).
pub fn plan(request: &TemplateRequest) -> Result<BuildPlan> {
    let mut plan = match &request.source {
        TemplateSource::Image(image) => BuildPlan {
            from_image: image.clone(),
            steps: Vec::new(),
            start_cmd: None,
            ready_cmd: None,
            context: None,
            dockerfile: None,
        },
        TemplateSource::Dockerfile { dockerfile, context } => {
            let text = std::fs::read_to_string(dockerfile).map_err(|error| {
                EngineError::io_at(dockerfile, format!("Cannot read the Dockerfile {}", dockerfile.display()), error)
            })?;
            let mut plan = parse_dockerfile(&text)?;
            if context.join(".dockerignore").exists() {
                return Err(EngineError::unsupported(format!(
                    "The E2B runtime does not apply .dockerignore files yet; remove {} or narrow the COPY sources",
                    context.join(".dockerignore").display()
                )));
            }
            for step in plan.steps.iter_mut().filter(|s| s.kind == "COPY") {
                let (src, dest) = (step.args[0].clone(), step.args[1].clone());
                step.files_hash = Some(files_hash(context, &src, &dest)?);
            }
            plan.context = Some(context.clone());
            plan.dockerfile = Some(text);
            plan
        }
    };
    if let Some(setup) = &request.setup {
        plan.steps.push(Step::new("RUN", vec![setup.clone(), "root".to_owned()]));
    }
    Ok(plan)
}

/// The template name for a request and its plan.
pub fn template_name(request: &TemplateRequest, plan: &BuildPlan) -> String {
    let reference = match (&request.source, &plan.dockerfile) {
        (TemplateSource::Image(image), _) if request.setup.is_none() => json!(image),
        (TemplateSource::Image(image), _) => json!({"image": image, "setup": request.setup}),
        (TemplateSource::Dockerfile { .. }, dockerfile) => json!({
            "dockerfile": dockerfile,
            "files": plan.steps.iter().filter_map(|s| s.files_hash.clone()).collect::<Vec<_>>(),
            "setup": request.setup,
        }),
    };
    let identity =
        json!({"runtime": "e2b-v0", "name": request.workbench, "version": request.version, "reference": reference});
    let digest = hex(&Sha256::digest(identity.to_string().as_bytes()));
    format!("workbench-{}-{}", slug(&request.workbench), &digest[..20])
}

/// Lower-case letters and digits, other runs as one `-`, at most 32 characters.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    let mut out: String = out.chars().take(32).collect();
    while out.ends_with('-') {
        out.pop();
    }
    if out.is_empty() { "package".to_owned() } else { out }
}

/// Splits a Dockerfile into logical instructions (keyword, argument text).
fn instructions(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if current.is_empty() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        if !current.is_empty() && trimmed.starts_with('#') {
            continue;
        }
        if let Some(head) = trimmed.strip_suffix('\\') {
            current.push_str(head);
            current.push(' ');
            continue;
        }
        current.push_str(trimmed);
        let (keyword, rest) = current.trim().split_once(char::is_whitespace).unwrap_or((current.trim(), ""));
        out.push((keyword.to_ascii_uppercase(), rest.trim().to_owned()));
        current.clear();
    }
    if !current.trim().is_empty() {
        let (keyword, rest) = current.trim().split_once(char::is_whitespace).unwrap_or((current.trim(), ""));
        out.push((keyword.to_ascii_uppercase(), rest.trim().to_owned()));
    }
    out
}

/// Whitespace-separated words with `"…"`/`'…'` quoting removed (ENV/ARG values).
fn words_unquoted(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut has = false;
    for c in text.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                has = true;
            }
            None if c.is_whitespace() => {
                if has || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                    has = false;
                }
            }
            None => word.push(c),
        }
    }
    if has || !word.is_empty() {
        words.push(word);
    }
    words
}

/// Leading `--flag[=value]` words, and the rest.
fn flags(words: Vec<String>) -> (Vec<(String, Option<String>)>, Vec<String>) {
    let split = words.iter().position(|w| !w.starts_with("--")).unwrap_or(words.len());
    let flags = words[..split]
        .iter()
        .map(|w| match w[2..].split_once('=') {
            Some((name, value)) => (name.to_owned(), Some(value.to_owned())),
            None => (w[2..].to_owned(), None),
        })
        .collect();
    (flags, words[split..].to_vec())
}

/// The SDK's Dockerfile subset (single stage) as a build plan without files hashes.
pub fn parse_dockerfile(text: &str) -> Result<BuildPlan> {
    let all = instructions(text);
    let froms: Vec<&(String, String)> = all.iter().filter(|(k, _)| k == "FROM").collect();
    if froms.len() > 1 {
        return Err(EngineError::unsupported(
            "The E2B runtime builds single-stage Dockerfiles only (as the E2B SDK does); this Dockerfile has several FROM instructions",
        ));
    }
    let Some((_, from)) = froms.first() else {
        return Err(EngineError::message("The Dockerfile has no FROM instruction".to_owned()));
    };
    let (_, from_words) = flags(from.split_whitespace().map(str::to_owned).collect());
    let from_image = from_words.first().cloned().unwrap_or_else(|| "e2bdev/base".to_owned());
    let mut plan = BuildPlan {
        from_image,
        steps: vec![Step::new("USER", vec!["root".into()]), Step::new("WORKDIR", vec!["/".into()])],
        start_cmd: None,
        ready_cmd: None,
        context: None,
        dockerfile: None,
    };
    let (mut user_set, mut workdir_set) = (false, false);
    for (keyword, rest) in &all {
        let words: Vec<String> = rest.split_whitespace().map(str::to_owned).collect();
        match keyword.as_str() {
            "FROM" | "EXPOSE" | "VOLUME" => {}
            "RUN" => {
                let (_, words) = flags(words);
                if !words.is_empty() {
                    plan.steps.push(Step::new("RUN", vec![words.join(" ")]));
                }
            }
            "COPY" | "ADD" => {
                let (flags, words) = flags(words);
                if flags.iter().any(|(name, _)| name == "from") {
                    return Err(EngineError::unsupported(format!(
                        "The E2B runtime builds single-stage Dockerfiles only; `{keyword} --from` is not supported"
                    )));
                }
                if words.first().is_some_and(|w| w.starts_with('[')) {
                    return Err(EngineError::unsupported(format!(
                        "The E2B runtime does not support the JSON form of {keyword}; write `{keyword} <src>… <dest>`"
                    )));
                }
                let user = flags.iter().find(|(n, _)| n == "chown").and_then(|(_, v)| v.clone()).unwrap_or_default();
                if let Some((dest, sources)) = words.split_last() {
                    for src in sources {
                        plan.steps
                            .push(Step::new("COPY", vec![src.clone(), dest.clone(), user.clone(), String::new()]));
                    }
                }
            }
            "WORKDIR" => {
                if let Some(dir) = words.first() {
                    plan.steps.push(Step::new("WORKDIR", vec![dir.clone()]));
                }
                workdir_set = true;
            }
            "USER" => {
                if let Some(user) = words.first() {
                    plan.steps.push(Step::new("USER", vec![user.clone()]));
                }
                user_set = true;
            }
            "ENV" | "ARG" => {
                let args = env_args(keyword == "ARG", &words_unquoted(rest));
                if !args.is_empty() {
                    plan.steps.push(Step::new("ENV", args));
                }
            }
            "CMD" | "ENTRYPOINT" if !words.is_empty() => {
                let mut command = words.join(" ");
                if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(&command) {
                    command = items
                        .iter()
                        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                        .collect::<Vec<_>>()
                        .join(" ");
                }
                plan.start_cmd = Some(command);
                plan.ready_cmd = Some(READY_AFTER_START.to_owned());
            }
            _ => {}
        }
    }
    if !user_set {
        plan.steps.push(Step::new("USER", vec!["user".into()]));
    }
    if !workdir_set {
        plan.steps.push(Step::new("WORKDIR", vec!["/home/user".into()]));
    }
    Ok(plan)
}

/// ENV/ARG arguments as `[k, v, …]`, by the SDK's rules.
fn env_args(is_arg: bool, words: &[String]) -> Vec<String> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut set = |key: &str, value: &str| {
        if let Some(existing) = pairs.iter_mut().find(|(k, _)| k == key) {
            existing.1 = value.to_owned();
        } else {
            pairs.push((key.to_owned(), value.to_owned()));
        }
    };
    let split =
        |word: &str| word.find('=').filter(|&i| i > 0).map(|i| (word[..i].to_owned(), word[i + 1..].to_owned()));
    match words {
        [first, second] if !(first.contains('=') && second.contains('=')) => set(first, second),
        [single] => match split(single) {
            Some((k, v)) => set(&k, &v),
            None if is_arg && !single.trim().is_empty() => set(single.trim(), ""),
            None => {}
        },
        _ => {
            for word in words {
                match split(word) {
                    Some((k, v)) => set(&k, &v),
                    None if is_arg => set(word, ""),
                    None => {}
                }
            }
        }
    }
    pairs.into_iter().flat_map(|(k, v)| [k, v]).collect()
}

/// Finds the template by name or builds it.
pub async fn prepare(
    api: &Api,
    request: &TemplateRequest,
    poll: Duration,
    progress: &dyn Fn(&str),
) -> Result<PreparedTemplate> {
    let plan = plan(request)?;
    let name = template_name(request, &plan);
    let image = match &request.source {
        TemplateSource::Image(image) => image.clone(),
        TemplateSource::Dockerfile { .. } => name.clone(),
    };
    if exists(api, &name).await? {
        progress(&format!("E2B template {name} exists; reusing it"));
        return Ok(PreparedTemplate { reference: name, image, cached: true });
    }
    progress(&format!("Building E2B template {name} from {}", plan.from_image));
    let created = api.call(Method::POST, "/v3/templates", Some(&json!({"name": name}))).await?;
    let text = |key: &str| created.get(key).and_then(Value::as_str).map(str::to_owned);
    let (Some(template_id), Some(build_id)) = (text("templateID"), text("buildID")) else {
        return Err(EngineError::reply("E2B API POST /v3/templates returned no templateID/buildID".to_owned()));
    };
    upload_copies(api, &plan, &template_id, progress).await?;
    let build_path = format!("/v2/templates/{}/builds/{}", segment(&template_id), segment(&build_id));
    api.call(Method::POST, &build_path, Some(&plan.body())).await?;
    wait_built(api, &name, &template_id, &build_id, poll, progress).await?;
    progress(&format!("E2B template {name} is ready ({template_id})"));
    Ok(PreparedTemplate { reference: template_id, image, cached: false })
}

/// Whether a template of this name exists for the key's team (a name another team owns is an error).
async fn exists(api: &Api, name: &str) -> Result<bool> {
    let alias_path = format!("/templates/aliases/{}", segment(name));
    let reply = api.send(Method::GET, &alias_path, None).await?;
    match reply.status {
        status if status.is_success() => Ok(true),
        StatusCode::NOT_FOUND => Ok(false),
        StatusCode::FORBIDDEN => Err(EngineError::message(format!(
            "The E2B template name {name} belongs to another team (GET /templates/aliases/{name} returned 403); this API key cannot use or build it"
        ))),
        _ => Err(api.failure(&Method::GET, "/templates/aliases/{name}", &reply)),
    }
}

/// Uploads the files of each `COPY` the service does not hold yet (by their files hash).
async fn upload_copies(api: &Api, plan: &BuildPlan, template_id: &str, progress: &dyn Fn(&str)) -> Result<()> {
    for step in plan.steps.iter().filter(|s| s.kind == "COPY") {
        let (Some(hash), Some(context)) = (&step.files_hash, &plan.context) else { continue };
        let link = api.call(Method::GET, &format!("/templates/{}/files/{hash}", segment(template_id)), None).await?;
        let present = link.get("present").and_then(Value::as_bool).unwrap_or(false);
        let url = link.get("url").and_then(Value::as_str);
        match (present, url) {
            (false, Some(url)) => {
                let archive = bytes::Bytes::from(pack(context, &step.args[0])?);
                upload_files(api, url, link.get("headers"), archive, &step.args[0]).await?;
                progress(&format!("Uploaded '{}'", step.args[0]));
            }
            _ => progress(&format!("Skipping upload of '{}', already cached", step.args[0])),
        }
    }
    Ok(())
}

/// Polls the build's status, passing its log lines on, until it is ready (then the lines written after it,
/// as the SDK does), fails, is cancelled or runs past [`BUILD_LIMIT`] (the service keeps the template; the
/// next run polls a new build).
async fn wait_built(
    api: &Api,
    name: &str,
    template_id: &str,
    build_id: &str,
    poll: Duration,
    progress: &dyn Fn(&str),
) -> Result<()> {
    let status_path = format!("/templates/{}/builds/{}/status", segment(template_id), segment(build_id));
    let report = |status: &Value| {
        let entries = status.get("logEntries").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
        for message in entries.iter().filter_map(|entry| entry.get("message").and_then(Value::as_str)) {
            progress(message);
        }
        entries.len()
    };
    let mut offset = 0usize;
    let deadline = tokio::time::Instant::now() + BUILD_LIMIT;
    loop {
        if tokio::time::Instant::now() > deadline {
            return Err(EngineError::limit(
                Limit::Time,
                format!("E2B template {name} did not finish building within {} minutes", BUILD_LIMIT.as_secs() / 60),
            ));
        }
        let status = api.call(Method::GET, &format!("{status_path}?logsOffset={offset}"), None).await?;
        offset += report(&status);
        match status.get("status").and_then(Value::as_str).unwrap_or("") {
            "building" | "waiting" => {
                let transport = api.transport();
                tokio::select! {
                    () = tokio::time::sleep(poll) => {}
                    () = transport.cancel().cancelled() => {
                        return Err(EngineError::cancelled(format!("The E2B template build of {name} was cancelled")));
                    }
                }
            }
            "ready" => {
                if let Ok(rest) = api.call(Method::GET, &format!("{status_path}?logsOffset={offset}"), None).await {
                    report(&rest);
                }
                return Ok(());
            }
            "error" => {
                let reason = status.get("reason");
                let message = reason.and_then(|r| r.get("message")).and_then(Value::as_str).unwrap_or("Unknown error");
                let step = reason.and_then(|r| r.get("step")).and_then(Value::as_str);
                return Err(EngineError::message(match step {
                    Some(step) => {
                        format!("The E2B template build of {name} failed at step {step}: {}", api.redact(message))
                    }
                    None => format!("The E2B template build of {name} failed: {}", api.redact(message)),
                }));
            }
            other => {
                return Err(EngineError::reply(format!(
                    "E2B API GET {status_path} returned an unknown build status {other:?}"
                )));
            }
        }
    }
}

/// `PUT`s a COPY step's archive to the presigned `url` the control plane gave (another origin: it carries
/// no credential of ours, only the headers the link names), within the transfer deadline.
async fn upload_files(
    api: &Api,
    url: &str,
    headers: Option<&Value>,
    archive: bytes::Bytes,
    source: &str,
) -> Result<()> {
    let transport = api.transport();
    let service = format!("Uploading the E2B template files for COPY {source}:");
    let call = Call {
        service: &service,
        method: Method::PUT,
        url,
        shown: "(presigned URL)",
        deadline: transport.limits().transfer(archive.len() as u64),
    };
    let build = |request: reqwest::RequestBuilder| {
        let mut put = request.header(reqwest::header::CONTENT_LENGTH, archive.len());
        for (name, value) in headers.and_then(Value::as_object).into_iter().flatten() {
            if let Some(value) = value.as_str() {
                put = put.header(name.as_str(), value);
            }
        }
        put.body(archive.clone())
    };
    transport.send_ok(&call, &build).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_recorded_dockerfile_gives_the_recorded_steps() -> Result<()> {
        let plan = parse_dockerfile(
            "FROM node:22-bookworm\nRUN apt-get update && apt-get install -y git\nCOPY app /opt/app\nENV FOO=bar\nWORKDIR /opt/app\n",
        )?;
        let steps: Vec<Value> = plan.steps.iter().map(Step::to_json).collect();
        assert_eq!(
            Value::Array(steps),
            json!([
                {"type":"USER","args":["root"],"force":false},
                {"type":"WORKDIR","args":["/"],"force":false},
                {"type":"RUN","args":["apt-get update && apt-get install -y git"],"force":false},
                {"type":"COPY","args":["app","/opt/app","",""],"force":false},
                {"type":"ENV","args":["FOO","bar"],"force":false},
                {"type":"WORKDIR","args":["/opt/app"],"force":false},
                {"type":"USER","args":["user"],"force":false}
            ])
        );
        assert_eq!(plan.from_image, "node:22-bookworm");
        Ok(())
    }

    #[test]
    fn multi_stage_and_start_commands() -> Result<()> {
        assert!(parse_dockerfile("FROM a AS b\nFROM c\n").is_err());
        let plan = parse_dockerfile("FROM a\nUSER x\nCMD [\"node\", \"server.js\"]\nARG V\nENV A=1 B=\"two words\"\n")?;
        assert_eq!(plan.start_cmd.as_deref(), Some("node server.js"));
        assert_eq!(plan.ready_cmd.as_deref(), Some("sleep 20"));
        let kinds: Vec<&str> = plan.steps.iter().map(|s| s.kind.as_str()).collect();
        assert_eq!(kinds, ["USER", "WORKDIR", "USER", "ENV", "ENV", "WORKDIR"]);
        assert_eq!(plan.steps[3].args, ["V", ""]);
        assert_eq!(plan.steps[4].args, ["A", "1", "B", "two words"]);
        Ok(())
    }

    #[test]
    fn slugs_are_short_and_plain() {
        assert_eq!(slug("My Bench/Ä_tool"), "my-bench-tool");
        assert_eq!(slug("---"), "package");
        assert_eq!(slug(&"x".repeat(40)).len(), 32);
    }
}
