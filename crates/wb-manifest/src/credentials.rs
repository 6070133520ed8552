//! The one credential-path policy: which file names and directories hold credentials. `check` refuses them in
//! `runner_config` and warns when a Dockerfile copies one; snapshots, Docker build contexts and remote staging
//! leave them out.

/// Directories that hold credentials wherever they are (`~/.ssh`, `~/.aws`, `~/.gnupg`): everything beneath
/// one is a credential path.
const CREDENTIAL_DIRECTORIES: [&str; 3] = [".ssh", ".aws", ".gnupg"];

/// File names (compared ignoring case) that hold credentials.
const CREDENTIAL_NAMES: [&str; 15] = [
    ".env",
    ".netrc",
    "_netrc",
    ".npmrc",
    ".pypirc",
    "auth.json",
    "credentials",
    "credentials.json",
    "oauth.json",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "id_rsa",
    ".git-credentials",
    ".dockercfg",
];

/// Extensions (compared ignoring case) of key, certificate-bundle and cluster-credential files.
const CREDENTIAL_EXTENSIONS: [&str; 5] = [".key", ".p12", ".pem", ".pfx", ".kubeconfig"];

/// Env templates, which hold names and placeholders, not values: allowed although they start with `.env.`.
const ENV_TEMPLATES: [&str; 2] = [".env.example", ".env.sample"];

/// Whether a path (relative or absolute, `/`-separated; a bare file name is a path too) names a credential
/// file or lies in a credential directory: a name in [`CREDENTIAL_NAMES`], `.env` and `.env.*` except the
/// templates `.env.example` and `.env.sample`, a name ending in `.key`, `.p12`, `.pem`, `.pfx` or
/// `.kubeconfig`, or any path with a `.ssh`, `.aws` or `.gnupg` component. Names are compared ignoring case;
/// the decision is by name only, never by content.
pub fn is_credential_path(path: &str) -> bool {
    let mut components = path.split('/').filter(|component| !component.is_empty() && *component != ".");
    let Some(name) = components.next_back() else { return false };
    let in_credential_directory =
        |component: &str| CREDENTIAL_DIRECTORIES.iter().any(|directory| component.eq_ignore_ascii_case(directory));
    if in_credential_directory(name) || components.any(in_credential_directory) {
        return true;
    }
    let name = name.to_ascii_lowercase();
    if ENV_TEMPLATES.contains(&name.as_str()) {
        return false;
    }
    CREDENTIAL_NAMES.contains(&name.as_str())
        || name.starts_with(".env.")
        || CREDENTIAL_EXTENSIONS.iter().any(|extension| name.ends_with(extension))
}

#[cfg(test)]
mod tests {
    use super::is_credential_path;

    #[test]
    fn credential_names_paths_and_directories() {
        for path in [
            ".env",
            ".env.local",
            "app/.ENV.production",
            "ID_RSA",
            "keys/id_ed25519",
            "id_dsa",
            "id_ecdsa",
            "server.pem",
            "tls/server.KEY",
            "cert.p12",
            "cert.pfx",
            "prod.kubeconfig",
            "auth.json",
            "oauth.json",
            "credentials.json",
            "credentials",
            "_netrc",
            ".netrc",
            ".npmrc",
            ".pypirc",
            ".git-credentials",
            ".ssh",
            ".ssh/",
            "home/.ssh/config",
            ".aws/config",
            "/root/.gnupg/pubring.kbx",
            "./.env",
        ] {
            assert!(is_credential_path(path), "{path}");
        }
        for path in [
            "",
            ".",
            "/",
            ".env.example",
            ".env.sample",
            "config/.ENV.Example",
            "env",
            ".env-example",
            "config.json",
            "keys.txt",
            "src/main.rs",
            "environment.txt",
            "gitconfig",
            "ssh/config",
            "my.aws.notes",
            "keyboard.md",
        ] {
            assert!(!is_credential_path(path), "{path}");
        }
    }
}
