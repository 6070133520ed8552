//! The docker runtime against a REAL Docker engine (no mock): image build and cache, published images present
//! and absent, tools inside the image, read-only workspaces enforced by the mount, uid mapping, environment
//! privacy, a run with a fake runner inside the image, and no container left behind after success, failure and
//! cancellation.
//!
//! No registry is reachable: each test builds its own image `FROM scratch` with Debian's `busybox-static` and
//! a fake OpenCode written in sh. Each package's context holds a nonce, so its image (and the containers made
//! from it, found by `ancestor`) belong to that test alone.
//!
//! When the engine's socket is unavailable these tests FAIL with a hint, unless `WB_LSP_SKIP_DOCKER_TESTS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bollard::query_parameters::{ListContainersOptionsBuilder, TagImageOptionsBuilder};
use serde_json::{Value, json};
use wb_engine::runtime::docker::{LABEL, context_archive};
use wb_engine::{Ending, Options, RunMode, SmokeStatus};
use wb_manifest::{ModelCatalog, OsFileSystem};
use wb_testsupport::{self as support, World, minimal};

const CANARY: &str = "canary-7f3e9b1c5d2a4e6f8091";
const KEY: &str = "sk-docker-test-0c4a9e2f";

/// The fake OpenCode inside the image: its behaviour depends on the task (the last argument).
const FAKE_OPENCODE: &str = r#"#!/bin/sh
emit() { printf '{"type":"text","part":{"type":"text","text":"%s"}}\n' "$1"; }
for task; do :; done
case "$task" in
  probe)
    emit "uid=$(id -u):$(id -g)"
    emit "pwd=$(pwd)"
    emit "out=$WORKBENCH_OUTPUT_DIR"
    emit "docs=$WORKBENCH_WORKSPACE_DOCS"
    emit "home=$HOME"
    if touch "$WORKBENCH_WORKSPACE_DOCS/written.txt" 2>/dev/null; then emit "docs-write=ok"; else emit "docs-write=refused"; fi
    if touch /workspace/from-container.txt 2>/dev/null; then emit "primary-write=ok"; else emit "primary-write=refused"; fi
    if touch /rootfs-file 2>/dev/null; then emit "root-write=ok"; else emit "root-write=refused"; fi
    if touch /tmp/scratch 2>/dev/null; then emit "tmp-write=ok"; else emit "tmp-write=refused"; fi
    if touch /workbench/package/x 2>/dev/null; then emit "package-write=ok"; else emit "package-write=refused"; fi
    if [ -n "$CANARY_TOKEN" ]; then emit "canary=set"; else emit "canary=unset"; fi
    echo "artifact" > "$WORKBENCH_OUTPUT_DIR/result.txt"
    ;;
  groups)
    emit "groups=$(id -G)"
    ;;
  fail)
    echo "the fake runner failed on purpose" >&2
    exit 3
    ;;
  hang)
    emit "hanging"
    sleep 300
    ;;
  git-attack)
    cd /workspace
    if printf '[core]\n\tfsmonitor = touch /tmp/pwned\n' >> .git/config 2>/dev/null; then emit "config=written"; else emit "config=refused"; fi
    if printf '#!/bin/sh\ntouch /tmp/pwned\n' > .git/hooks/post-checkout 2>/dev/null; then emit "hook=written"; else emit "hook=refused"; fi
    if mv .git .git-moved 2>/dev/null; then emit "move=done"; else emit "move=refused"; fi
    rm -rf .git 2>/dev/null
    if [ -f .git/config ]; then emit "remove=refused"; else emit "remove=done"; fi
    if printf 'gitdir: /workspace/evil\n' > sub/.git 2>/dev/null; then emit "gitfile=written"; else emit "gitfile=refused"; fi
    if mkdir -p nested/.GIT && printf '[core]\n\tfsmonitor = touch /tmp/pwned\n' > nested/.GIT/config; then emit "nested=created"; fi
    echo "changed by the agent" >> README.md
    ;;
  session-*)
    # A session's turn: what the last turn's container left in OpenCode's data directory, and the arguments.
    mkdir -p "$XDG_DATA_HOME/opencode"
    previous=$(cat "$XDG_DATA_HOME/opencode/last-turn" 2>/dev/null || echo none)
    echo "$task" > "$XDG_DATA_HOME/opencode/last-turn"
    printf '{"type":"text","sessionID":"ses_docker","part":{"type":"text","text":"%s after %s"}}\n' "$task" "$previous"
    emit "argv=$*"
    ;;
  *)
    emit "done"
    ;;
esac
"#;

/// The fake Claude Code inside the image: it reads its task on stdin (a user message), asks permission for a
/// Bash command in Claude Code's control protocol, reads the answer, and says what it read.
const FAKE_CLAUDE: &str = r#"#!/bin/sh
emit() { printf '{"type":"assistant","message":{"id":"m%s","content":[{"type":"text","text":"%s"}]}}\n' "$2" "$1"; }
IFS= read -r first || exit 4
case "$first" in *'"type":"user"'*'docker-ask'*) emit "task=ok" 1 ;; *) emit "task=missing" 1 ;; esac
printf '%s\n' '{"type":"control_request","request_id":"native-1","request":{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"rm x"},"tool_use_id":"t1"}}'
IFS= read -r reply || exit 5
case "$reply" in *'"behavior":"deny"'*) emit "reply=deny" 2 ;; *'"behavior":"allow"'*) emit "reply=allow" 2 ;; *) emit "reply=other" 2 ;; esac
printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"result":"done","usage":{"input_tokens":1,"output_tokens":1},"total_cost_usd":0}'
"#;

fn catalog() -> &'static ModelCatalog {
    ModelCatalog::embedded()
}

/// The engine, or `None` when the tests are skipped on purpose. Panics with a hint when it is unavailable.
fn engine() -> Option<(tokio::runtime::Runtime, bollard::Docker)> {
    if std::env::var("WB_LSP_SKIP_DOCKER_TESTS").is_ok_and(|v| v == "1") {
        eprintln!("docker tests skipped: WB_LSP_SKIP_DOCKER_TESTS=1");
        return None;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let client = {
        let _guard = runtime.enter();
        bollard::Docker::connect_with_local_defaults()
    };
    let reachable = client.and_then(|c| runtime.block_on(c.negotiate_version())).and_then(|c| {
        runtime.block_on(c.ping())?;
        Ok(c)
    });
    match reachable {
        Ok(client) => Some((runtime, client)),
        Err(error) => panic!(
            "The Docker engine is unavailable ({error}). These tests need a real engine: install docker.io and start \
             dockerd (scripts/test.sh does both), or set WB_LSP_SKIP_DOCKER_TESTS=1 to skip them."
        ),
    }
}

fn nonce() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    format!("{}-{}", now.as_nanos(), std::process::id())
}

/// Writes the image context `<package>/image/` (busybox rootfs, the fake OpenCode, a nonce) and its Dockerfile.
fn image_context(package_dir: &Path, nonce: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let context = package_dir.join("image");
    let bin = context.join("rootfs/bin");
    let local = context.join("rootfs/usr/local/bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&local).unwrap();
    let busybox = Path::new("/bin/busybox");
    assert!(busybox.is_file(), "these tests need Debian's busybox-static (/bin/busybox); scripts/test.sh installs it");
    std::fs::copy(busybox, bin.join("busybox")).unwrap();
    for applet in ["sh", "cat", "ls", "env", "id", "touch", "sleep", "echo", "printf", "pwd", "mkdir", "mv", "rm", "["]
    {
        std::os::unix::fs::symlink("busybox", bin.join(applet)).unwrap();
    }
    let runner = local.join("opencode");
    std::fs::write(&runner, FAKE_OPENCODE).unwrap();
    std::fs::set_permissions(&runner, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(context.join("nonce.txt"), nonce).unwrap();
    std::fs::write(
        context.join("Dockerfile"),
        "FROM scratch\nCOPY rootfs/ /\nCOPY nonce.txt /nonce.txt\nENV PATH=/usr/local/bin:/bin\n",
    )
    .unwrap();
    context
}

/// A Docker package built from its own context, with a read-only named workspace and an optional canary env.
fn docker_package(world: &World, name: &str, extra: &str) -> PathBuf {
    let manifest = minimal(
        name,
        "opencode",
        "openai/gpt-5.1",
        &format!(
            "{extra}env:\n  CANARY_TOKEN:\n    required: false\nworkspaces:\n  docs:\n    required: false\n    access: read-only\nruntimes:\n  docker:\n    image:\n      build: ./image/Dockerfile\n      context: ./image\n"
        ),
    );
    let dir = world.package(name, &manifest);
    image_context(&dir, &format!("{name}-{}", nonce()));
    dir
}

fn options(world: &World, package: &str, task: &str) -> Options {
    let mut inherited = world.inherited();
    inherited.insert("OPENAI_API_KEY".into(), KEY.into());
    common::options(world, format!(".workbenches/{package}"), task, inherited)
}

fn build(options: &Options) -> wb_engine::BuildReport {
    let mut reports = wb_engine::build(&OsFileSystem, options, catalog()).unwrap();
    assert_eq!(reports.len(), 1);
    reports.remove(0)
}

/// Containers (running or not) made from an image.
fn containers_of(
    engine: &(tokio::runtime::Runtime, bollard::Docker),
    image: &str,
) -> Vec<bollard::models::ContainerSummary> {
    let (runtime, client) = engine;
    let filters = HashMap::from([
        ("ancestor".to_owned(), vec![image.to_owned()]),
        ("label".to_owned(), vec![format!("{LABEL}=1")]),
    ]);
    let options = ListContainersOptionsBuilder::default().all(true).filters(&filters).build();
    runtime.block_on(client.list_containers(Some(options))).unwrap()
}

fn run_collect(options: &Options, cancel_on: Option<&str>) -> (wb_engine::RunResult, Vec<Value>, Option<Value>) {
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let mut events = Vec::new();
    let mut seen_running = None;
    let result = wb_engine::run(&OsFileSystem, options, &RunMode::default(), catalog(), cancel, &mut |event| {
        let value = serde_json::to_value(event).unwrap();
        if let Some(text) = cancel_on
            && value["type"] == "output.text"
            && value["data"]["text"] == text
        {
            seen_running = Some(value.clone());
            flag.store(true, Ordering::SeqCst);
        }
        events.push(value);
    })
    .unwrap();
    (result, events, seen_running)
}

fn texts(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == "output.text")
        .map(|e| e["data"]["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn context_archive_excludes_credentials_and_vcs_and_hashes_content() {
    let world = World::new();
    let dir = world.dir("ctx");
    std::fs::write(dir.join("Dockerfile"), "FROM scratch\n").unwrap();
    std::fs::write(dir.join("app.txt"), "one").unwrap();
    std::fs::write(dir.join(".env"), "SECRET=1").unwrap();
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    std::fs::write(dir.join(".git/config"), "x").unwrap();
    std::fs::create_dir_all(dir.join("node_modules/p")).unwrap();
    std::fs::write(dir.join("node_modules/p/i.js"), "x").unwrap();
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/credentials.json"), "{}").unwrap();
    std::os::unix::fs::symlink("app.txt", dir.join("link")).unwrap();
    // The outcomes policy: credential directories and secret-bearing names stay on the host too.
    std::fs::create_dir_all(dir.join(".ssh")).unwrap();
    std::fs::write(dir.join(".ssh/config"), "Host x").unwrap();
    std::fs::write(dir.join("sub/cluster.kubeconfig"), "x").unwrap();
    std::fs::write(dir.join("sub/credentials"), "x").unwrap();
    std::fs::write(dir.join(".pypirc"), "x").unwrap();
    let first = context_archive(&dir, &dir, &dir.join("Dockerfile")).unwrap();
    assert_eq!(first.entries, vec!["Dockerfile", "app.txt", "link", "sub/"]);
    assert_eq!(first.dockerfile, "Dockerfile");
    // A credential file's content is not part of the hash; the context's content is.
    std::fs::write(dir.join(".env"), "SECRET=2").unwrap();
    assert_eq!(context_archive(&dir, &dir, &dir.join("Dockerfile")).unwrap().hash, first.hash);
    std::fs::write(dir.join("app.txt"), "two").unwrap();
    assert_ne!(context_archive(&dir, &dir, &dir.join("Dockerfile")).unwrap().hash, first.hash);
    // A Dockerfile outside the context travels under its own name.
    let outside = world.file("Dockerfile.other", "FROM scratch\n");
    assert_eq!(context_archive(&world.root, &dir, &outside).unwrap().dockerfile, ".wb-lsp.Dockerfile");
}

#[test]
fn build_then_cache_hit_and_published_images() {
    let Some(engine) = engine() else { return };
    let world = World::new();
    docker_package(&world, "dk-build", "");
    let mut options = options(&world, "dk-build", "x");
    let messages = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = std::sync::Arc::clone(&messages);
    options.context.progress = Some(wb_engine::lifecycle::Progress(std::sync::Arc::new(move |message: &str| {
        sink.lock().unwrap().push(message.to_owned());
    })));
    let first = build(&options);
    let seen = messages.lock().unwrap().clone();
    assert!(seen.first().is_some_and(|m| m.starts_with("Building image wb-lsp/dk-build:")), "{seen:?}");
    assert!(seen.iter().any(|m| m.starts_with("Step 1/")), "the build's steps are reported: {seen:?}");
    assert_eq!(first.error, None);
    let image = first.image.clone().unwrap();
    assert!(image.built && !image.cached, "{image:?}");
    assert!(image.reference.starts_with("wb-lsp/dk-build:"), "{image:?}");
    assert!(image.id.starts_with("sha256:"), "{image:?}");
    // Unchanged package: the cached image, no rebuild.
    messages.lock().unwrap().clear();
    let second = build(&options).image.unwrap();
    assert!(second.cached, "{second:?}");
    assert!(messages.lock().unwrap().iter().any(|m| m.starts_with("Using cached image")));
    assert_eq!((second.reference.as_str(), second.id.as_str()), (image.reference.as_str(), image.id.as_str()));
    // A credential file in the context does not change the image either.
    world.file(".workbenches/dk-build/image/.env", "SECRET=1\n");
    assert!(build(&options).image.unwrap().cached);

    // A published reference present locally is used as it is, with its id recorded.
    let published = format!("wb-lsp-test/published:{}", nonce());
    let (runtime, client) = &engine;
    let (repo, tag) = published.split_once(':').unwrap();
    runtime
        .block_on(client.tag_image(&image.id, Some(TagImageOptionsBuilder::default().repo(repo).tag(tag).build())))
        .unwrap();
    world.package(
        "dk-published",
        &minimal(
            "dk-published",
            "opencode",
            "openai/gpt-5.1",
            &format!("runtimes:\n  docker:\n    image: {published}\n"),
        ),
    );
    let report = build(&options_for_source(&world, "dk-published"));
    let found = report.image.unwrap();
    assert_eq!((found.built, found.cached), (false, true));
    assert_eq!(found.id, image.id);
    assert_eq!(found.reference, published);

    // Absent and not pullable: a clear error naming the image.
    let absent = format!("wb-lsp-test/absent:{}", nonce());
    world.package(
        "dk-absent",
        &minimal("dk-absent", "opencode", "openai/gpt-5.1", &format!("runtimes:\n  docker:\n    image: {absent}\n")),
    );
    let report = build(&options_for_source(&world, "dk-absent"));
    let error = report.error.unwrap();
    assert!(error.starts_with(&format!("Cannot pull Docker image {absent}: it is not present locally")), "{error}");
    let smoke = wb_engine::smoke(&OsFileSystem, &options_for_source(&world, "dk-absent"), catalog()).unwrap();
    assert_eq!(smoke[0].status, SmokeStatus::Failed);
    assert!(smoke[0].error.as_ref().unwrap().message.contains(&absent));
}

fn options_for_source(world: &World, package: &str) -> Options {
    options(world, package, "x")
}

#[test]
fn tools_are_looked_up_inside_the_image() {
    let Some(engine) = engine() else { return };
    let world = World::new();
    docker_package(&world, "dk-tools", "tools:\n  - cat\n  - sleep\n");
    let started = Instant::now();
    let reports = wb_engine::smoke(&OsFileSystem, &options(&world, "dk-tools", "x"), catalog()).unwrap();
    eprintln!("smoke (first, image built): {:?}", started.elapsed());
    assert_eq!(reports[0].status, SmokeStatus::Ready, "{:?}", reports[0]);
    assert_eq!(reports[0].runtime, "docker");
    assert_eq!(reports[0].runner.as_ref().unwrap().path.as_deref(), Some("/usr/local/bin/opencode"));
    let tools: Vec<&str> = reports[0].tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tools, vec!["cat", "sleep"]);
    // The smoke time with a cached image.
    let started = Instant::now();
    let reports = wb_engine::smoke(&OsFileSystem, &options(&world, "dk-tools", "x"), catalog()).unwrap();
    eprintln!("smoke (cached image): {:?}", started.elapsed());
    assert_eq!(reports[0].status, SmokeStatus::Ready);
    let image = build(&options(&world, "dk-tools", "x")).image.unwrap();
    assert!(containers_of(&engine, &image.id).is_empty(), "preflight containers are removed");

    // python3 is on this host but not in the image: it does not count.
    docker_package(&world, "dk-missing", "tools:\n  - python3\n");
    let reports = wb_engine::smoke(&OsFileSystem, &options(&world, "dk-missing", "x"), catalog()).unwrap();
    assert_eq!(reports[0].status, SmokeStatus::Failed);
    assert_eq!(reports[0].error.as_ref().unwrap().message, "Required CLI tool is unavailable: python3");
    // A dry run lists what preflight did not find beside the translation.
    let report = wb_engine::dry_run(&OsFileSystem, &options(&world, "dk-missing", "x"), None, catalog()).unwrap();
    assert_eq!(report.problems, ["Required CLI tool is unavailable: python3"]);
    // An image without a shell cannot be looked into: a problem of the image, also listed, never the engine's.
    let dir = docker_package(&world, "dk-no-shell", "");
    std::fs::write(dir.join("image/Dockerfile"), "FROM scratch\nCOPY nonce.txt /nonce.txt\n").unwrap();
    let report = wb_engine::dry_run(&OsFileSystem, &options(&world, "dk-no-shell", "x"), None, catalog()).unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    assert!(report.problems[0].starts_with("Cannot run the preflight in Docker image "), "{:?}", report.problems);
    assert!(report.problems[0].contains("(it needs /bin/sh)"), "{:?}", report.problems);
    // The runner itself must be in the image.
    let dir = docker_package(&world, "dk-claude", "");
    let manifest = std::fs::read_to_string(dir.join("workbench.yml")).unwrap();
    std::fs::write(
        dir.join("workbench.yml"),
        manifest
            .replace("runner: opencode", "runner: claude-code")
            .replace("openai/gpt-5.1", "anthropic/claude-sonnet-4.5"),
    )
    .unwrap();
    let reports = wb_engine::smoke(&OsFileSystem, &options(&world, "dk-claude", "x"), catalog()).unwrap();
    let message = &reports[0].error.as_ref().unwrap().message;
    assert_eq!(message, &wb_engine::adapters::runner_unavailable("claude-code", "the image's PATH"));
    assert!(
        message.starts_with(
            "Runner CLI is unavailable: claude-code (no `claude` executable on the image's PATH). Install \
             @anthropic-ai/claude-code 2.1.332"
        ),
        "{message}"
    );
}

#[test]
fn run_in_the_container_with_mounts_uid_and_private_env() {
    let Some(engine) = engine() else { return };
    let world = World::new();
    docker_package(&world, "dk-run", "");
    let docs = world.dir("docs");
    let mut options = options(&world, "dk-run", "probe");
    options.request.settings.workspaces = vec![format!("docs={}", docs.display())];
    options.request.env = vec![format!("CANARY_TOKEN={CANARY}")];
    let (result, events, _) = run_collect(&options, None);
    assert_eq!(result.ending, Ending::Completed, "{events:#?}");
    support::check_events(&events, "opencode");
    let uid = nix::unistd::getuid();
    let gid = nix::unistd::getgid();
    assert_eq!(
        texts(&events),
        vec![
            format!("uid={uid}:{gid}"),
            "pwd=/workspace".to_owned(),
            "out=/outbox".to_owned(),
            "docs=/workspaces/docs".to_owned(),
            "home=/workbench/state".to_owned(),
            "docs-write=refused".to_owned(),
            "primary-write=ok".to_owned(),
            "root-write=refused".to_owned(),
            "tmp-write=ok".to_owned(),
            "package-write=refused".to_owned(),
            "canary=set".to_owned(),
        ]
    );
    assert!(world.work.join("from-container.txt").is_file(), "the primary workspace is mounted read-write");
    assert!(!docs.join("written.txt").exists(), "the read-only workspace was not written");
    let outbox = world.home.join(".workbench/runs").join(&result.run_id).join("outbox/result.txt");
    assert_eq!(std::fs::read_to_string(outbox).unwrap(), "artifact\n");
    // The bind-mounted workspace and outbox are collected on the host: the outcome precedes run.completed.
    let available = &events[events.len() - 2];
    assert_eq!(available["type"], "outcome.available", "{events:#?}");
    assert_eq!(available["data"]["application_state"], "present");
    assert_eq!(available["data"]["completeness"], "complete");
    assert_eq!((&available["data"]["changesets"], &available["data"]["artifacts"]), (&json!(1), &json!(1)));
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(
            world
                .home
                .join(".workbench/outcomes")
                .join(available["data"]["outcome_id"].as_str().unwrap())
                .join("outcome.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let paths: Vec<&str> =
        manifest["changesets"][0]["entries"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap()).collect();
    assert!(paths.contains(&"from-container.txt"), "{paths:?}");
    assert_eq!(manifest["artifacts"][0]["path"], "result.txt");
    support::assert_outcomes_schema("outcome.schema.json", &manifest);
    let all = serde_json::to_string(&events).unwrap();
    assert!(!all.contains(CANARY) && !all.contains(KEY), "a value leaked into the events");
    let image = build(&options).image.unwrap();
    assert!(containers_of(&engine, &image.id).is_empty(), "no container is left after success");

    // Failure: the runner's exit status and stderr, and no container left.
    options.request.task = Some("fail".into());
    let (result, events, _) = run_collect(&options, None);
    assert_eq!(
        result.ending,
        Ending::Failed("The runner exited with status 3: the fake runner failed on purpose".into()),
        "{events:#?}"
    );
    support::check_events(&events, "opencode");
    assert!(containers_of(&engine, &image.id).is_empty(), "no container is left after a failure");
}

/// The container's agent attacks the workspace's Git metadata: `core.fsmonitor` in `.git/config` and a hook
/// would run on the host at the user's next `git status` or checkout, a rewritten submodule `gitdir:` file or a
/// new `.GIT` directory would point Git at the agent's own configuration.
#[test]
fn the_container_cannot_change_the_workspace_git() {
    let Some(_engine) = engine() else { return };
    let world = World::new();
    docker_package(&world, "dk-git", "");
    std::fs::write(world.work.join("README.md"), "hello\n").unwrap();
    support::git(&world.work, &["init", "-q"]);
    support::git(&world.work, &["add", "README.md"]);
    support::git(&world.work, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first"]);
    std::fs::create_dir_all(world.work.join("sub")).unwrap();
    std::fs::write(world.work.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
    let config_before = std::fs::read(world.work.join(".git/config")).unwrap();
    let options = options(&world, "dk-git", "git-attack");
    let (result, events, _) = run_collect(&options, None);
    assert_eq!(
        texts(&events),
        ["config=refused", "hook=refused", "move=refused", "remove=refused", "gitfile=refused", "nested=created"],
        "{events:#?}"
    );
    assert_eq!(std::fs::read(world.work.join(".git/config")).unwrap(), config_before);
    assert!(!world.work.join(".git/hooks/post-checkout").exists());
    assert_eq!(std::fs::read_to_string(world.work.join("sub/.git")).unwrap(), "gitdir: ../.git/modules/sub\n");
    assert!(!world.work.join("nested/.GIT").exists(), "the Git directory the agent made is removed");
    // The run says what happened: the outcome fails naming the directory (and the CLI exits non-zero).
    let failed = events.iter().find(|e| e["type"] == "outcome.failed").expect("outcome.failed");
    let message = failed["data"]["message"].as_str().unwrap();
    assert!(message.contains("nested/.GIT (removed)"), "{message}");
    assert_eq!(result.outcome_error.as_deref(), Some(message));
    assert_eq!(result.ending, Ending::Completed, "the runner's own ending stays the authority");
    support::check_events(&events, "opencode");
    // The user's own Git still works on the workspace and runs nothing the agent wrote.
    let status = support::git(&world.work, &["status", "--porcelain"]);
    assert!(status.contains(" M README.md"), "{status}");
}

#[test]
fn cancellation_removes_the_container_and_arguments_hold_no_values() {
    let Some(engine) = engine() else { return };
    let world = World::new();
    docker_package(&world, "dk-cancel", "");
    let image = build(&options(&world, "dk-cancel", "x")).image.unwrap();
    let mut options = options(&world, "dk-cancel", "hang");
    options.request.env = vec![format!("CANARY_TOKEN={CANARY}")];
    // Inspect the running container from another thread while the runner hangs, then the run is cancelled.
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    let id = image.id.clone();
    let watcher = std::thread::spawn(move || {
        let engine = engine_for_thread();
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Some(container) = containers_of(&engine, &id)
                .into_iter()
                .find(|c| c.state.as_ref().map(ToString::to_string).as_deref() == Some("running"))
            {
                let (runtime, client) = &engine;
                let inspect =
                    runtime.block_on(client.inspect_container(container.id.as_deref().unwrap(), None)).unwrap();
                tx.send(serde_json::to_value(inspect).unwrap()).unwrap();
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    });
    let started = Instant::now();
    let (result, events, seen) = run_collect(&options, Some("hanging"));
    assert!(seen.is_some(), "{events:#?}");
    assert_eq!(result.ending, Ending::Cancelled);
    // A cancelled runner may leave work half-written: its outcome is partial.
    assert_eq!(events[events.len() - 2]["type"], "outcome.available", "{events:#?}");
    assert_eq!(events[events.len() - 2]["data"]["completeness"], "partial");
    assert!(started.elapsed() < Duration::from_secs(30), "cancellation took {:?}", started.elapsed());
    support::check_events(&events, "opencode");
    watcher.join().unwrap();
    let inspect = rx.try_recv().expect("the running container was inspected");
    for key in ["Args", "Path"] {
        assert!(!inspect[key].to_string().contains(CANARY), "{key}: {}", inspect[key]);
    }
    for key in ["Cmd", "Entrypoint"] {
        assert!(!inspect["Config"][key].to_string().contains(CANARY), "{key}: {}", inspect["Config"][key]);
    }
    assert_eq!(inspect["Config"]["User"], format!("{}:{}", nix::unistd::getuid(), nix::unistd::getgid()));
    assert_eq!(inspect["HostConfig"]["ReadonlyRootfs"], true);
    assert!(containers_of(&engine, &image.id).is_empty(), "no container is left after cancellation");
}

fn engine_for_thread() -> (tokio::runtime::Runtime, bollard::Docker) {
    engine().expect("the engine")
}

#[test]
fn requirements_against_the_engine() {
    let Some((runtime, client)) = engine() else { return };
    let info = runtime.block_on(client.info()).unwrap();
    let cpus = info.ncpu.unwrap();
    let other_arch = if info.architecture.as_deref() == Some("x86_64") {
        ("requirements:\n  arch: [arm64]\n", "requires arch arm64 but the docker runtime runs on x64")
    } else {
        ("requirements:\n  arch: [x64]\n", "requires arch x64 but the docker runtime runs on")
    };
    let world = World::new();
    let cases = [
        (
            "dk-gpu",
            "requirements:\n  gpu: true\n",
            "GPU requirements are not supported on the docker runtime".to_owned(),
        ),
        ("dk-cpu", "requirements:\n  cpu: 4096\n", format!("requires 4096 CPUs but the Docker daemon has {cpus}")),
        (
            "dk-os",
            "requirements:\n  os: [macos, windows]\n",
            "requires os macos or windows but the docker runtime provides linux".to_owned(),
        ),
        ("dk-arch", other_arch.0, other_arch.1.to_owned()),
    ];
    for (name, extra, expected) in cases {
        docker_package(&world, name, extra);
        let mut options = options(&world, name, "x");
        options.request.settings.allow_unchecked_gpu = true;
        let error = wb_engine::dry_run(&OsFileSystem, &options, None, catalog()).err().unwrap().to_string();
        let prefix = format!("Workbench {name} cannot run on the docker runtime: ");
        assert!(error.starts_with(&format!("{prefix}{expected}")), "{error}");
    }
    docker_package(&world, "dk-limits", "requirements:\n  os: [linux]\n  cpu: 1\n  memory_gb: 1\n  disk_gb: 5\n");
    let reports = wb_engine::smoke(&OsFileSystem, &options(&world, "dk-limits", "x"), catalog()).unwrap();
    let requirements = reports[0].requirements.clone().unwrap_or_else(|| panic!("{:?}", reports[0]));
    assert_eq!(requirements.applied, vec!["cpu limit 1", "memory limit 1 GiB"]);
    assert_eq!(requirements.checked[..2], ["os linux".to_owned(), format!("cpu {cpus}")]);
    assert_eq!(requirements.unchecked, vec!["disk_gb is not checked on the docker runtime"]);
}

#[test]
fn host_engine_access_is_refused_without_the_flag() {
    let Some(_engine) = engine() else { return };
    let world = World::new();
    docker_package(&world, "dk-host", "");
    let dir = world.repo.join(".workbenches/dk-host");
    let manifest = std::fs::read_to_string(dir.join("workbench.yml")).unwrap();
    std::fs::write(dir.join("workbench.yml"), format!("{manifest}    docker:\n      engine:\n        mode: host\n"))
        .unwrap();
    let options = options(&world, "dk-host", "x");
    let error = wb_engine::dry_run(&OsFileSystem, &options, None, catalog()).err().unwrap().to_string();
    assert_eq!(error, "Host Docker engine access requires explicit --allow-host-docker authorization");
    // With the grant, preflight asks for the docker CLI inside the image (this image has none).
    let mut granted = options.clone();
    granted.request.settings.allow_host_docker = true;
    // The dry run still shows the translation, with the problem listed.
    let report = wb_engine::dry_run(&OsFileSystem, &granted, None, catalog()).unwrap();
    assert_eq!(report.problems, ["Required CLI tool is unavailable: docker"]);
}

/// Host engine mode as a user who reaches the engine through the socket's group (`docker`): the container runs as
/// the user's uid:gid and gets that group too (issue 40: before, no supplementary group, so host engine mode could
/// not work for such a user).
#[test]
fn host_engine_containers_get_the_sockets_group() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let Some(_engine) = engine() else { return };
    let socket = std::env::var("DOCKER_HOST").ok().and_then(|h| h.strip_prefix("unix://").map(str::to_owned));
    let socket = socket.unwrap_or_else(|| "/var/run/docker.sock".to_owned());
    let gid = std::fs::metadata(&socket).unwrap().gid();
    if gid == nix::unistd::getgid().as_raw() {
        eprintln!("skipped: the engine's socket has the user's own primary group, nothing to add");
        return;
    }
    let world = World::new();
    let dir = docker_package(&world, "dk-groups", "");
    let manifest = std::fs::read_to_string(dir.join("workbench.yml")).unwrap();
    std::fs::write(dir.join("workbench.yml"), format!("{manifest}    docker:\n      engine:\n        mode: host\n"))
        .unwrap();
    // A docker CLI for preflight: it answers.
    let docker = dir.join("image/rootfs/usr/local/bin/docker");
    std::fs::write(&docker, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&docker, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut options = options(&world, "dk-groups", "groups");
    options.request.settings.allow_host_docker = true;
    let (result, events, _) = run_collect(&options, None);
    assert_eq!(result.ending, Ending::Completed, "{events:#?}");
    let groups = events
        .iter()
        .filter_map(|e| e["data"]["text"].as_str())
        .find_map(|text| text.strip_prefix("groups="))
        .unwrap_or_else(|| panic!("{events:#?}"))
        .to_owned();
    assert!(groups.split_whitespace().any(|g| g == gid.to_string()), "groups {groups} lack the socket's {gid}");
}

/// A session on docker: each turn runs in a container of its own, and the next one finds OpenCode's data (kept
/// in the staged directory the containers mount) and is given the conversation's id; ended while idle, the
/// session completes and leaves no container.
#[test]
fn a_session_takes_turns_in_containers() {
    let Some(engine) = engine() else { return };
    let world = World::new();
    docker_package(&world, "sess", "");
    let options = options(&world, "sess", "session-one");
    let session = wb_engine::SessionOptions { idle_timeout: Duration::from_secs(120) };
    let mode = RunMode::Session { limits: wb_engine::RunLimits::default(), session, resume_from: None };
    let home = world.home.join(".workbench");
    let image = build(&options).image.unwrap();
    let cancel = Arc::new(AtomicBool::new(false));
    let (sender, received) = std::sync::mpsc::channel::<Value>();
    let running = {
        let (options, cancel) = (options.clone(), Arc::clone(&cancel));
        std::thread::spawn(move || {
            wb_engine::run(&OsFileSystem, &options, &mode, catalog(), cancel, &mut |event| {
                let _ = sender.send(serde_json::to_value(event).unwrap());
            })
            .unwrap()
        })
    };
    let mut events = Vec::new();
    let next_until = |kind: &str, turn: u64, events: &mut Vec<Value>| loop {
        let event =
            received.recv_timeout(Duration::from_secs(120)).unwrap_or_else(|_| panic!("no {kind}: {events:#?}"));
        events.push(event.clone());
        if event["type"] == kind && event["data"]["turn_index"] == turn {
            return;
        }
    };
    next_until("turn.completed", 1, &mut events);
    let run_id = events[0]["run_id"].as_str().unwrap().to_owned();
    wb_engine::sessions::queue(&home, &run_id, "session-two").unwrap();
    next_until("turn.completed", 2, &mut events);
    cancel.store(true, Ordering::SeqCst);
    let result = running.join().unwrap();
    events.extend(received.try_iter());
    assert_eq!(result.ending, Ending::Completed, "{events:#?}");
    let texts = texts(&events);
    assert_eq!(texts[0], "session-one after none", "{texts:?}");
    let second = texts.iter().find(|t| t.starts_with("session-two")).unwrap_or_else(|| panic!("{texts:?}"));
    assert_eq!(second, "session-two after session-one", "the second container found the first's data");
    let argv = texts.iter().rev().find(|t| t.starts_with("argv=")).unwrap();
    assert!(argv.contains("--session ses_docker"), "the conversation is carried on: {argv}");
    assert_eq!(events.last().unwrap()["type"], "run.completed");
    assert!(containers_of(&engine, &image.id).is_empty(), "no container is left");
}

/// Claude Code in a container reads its task and the answers to what it asks on its stdin (attached to the
/// container's), and the container goes once the run ends.
#[test]
fn claude_code_in_a_container_reads_its_task_and_answers_on_stdin() {
    let Some(engine) = engine() else { return };
    let world = World::new();
    let manifest = minimal(
        "cc-docker",
        "claude-code",
        "anthropic/claude-sonnet-4.5",
        "runtimes:\n  docker:\n    image:\n      build: ./image/Dockerfile\n      context: ./image\n",
    );
    let dir = world.package("cc-docker", &manifest);
    let context = image_context(&dir, &format!("cc-docker-{}", nonce()));
    let claude = context.join("rootfs/usr/local/bin/claude");
    std::fs::write(&claude, FAKE_CLAUDE).unwrap();
    std::fs::set_permissions(&claude, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut options = options(&world, "cc-docker", "docker-ask");
    options.context.inherited.insert("ANTHROPIC_API_KEY".into(), KEY.into());
    let image = build(&options).image.unwrap().id;
    let limits = wb_engine::RunLimits {
        input: wb_engine::input::InputPolicy { no_input: true, timeout: None },
        ..wb_engine::RunLimits::default()
    };
    let mut events = Vec::new();
    let cancel = Arc::new(AtomicBool::new(false));
    let result = wb_engine::run(&OsFileSystem, &options, &RunMode::Once { limits }, catalog(), cancel, &mut |event| {
        events.push(serde_json::to_value(event).unwrap());
    })
    .unwrap();
    assert_eq!(result.ending, Ending::Completed, "{events:#?}");
    assert_eq!(texts(&events), ["task=ok", "reply=deny"], "{events:#?}");
    let types = support::types(&events);
    assert!(types.contains(&"input.requested".to_owned()) && types.contains(&"input.rejected".to_owned()), "{types:?}");
    support::check_events(&events, "claude-code");
    assert!(containers_of(&engine, &image).is_empty(), "no container is left");
}
