//! The address a container reaches the host on: the default bridge network's gateway, found robustly.
//!
//! Docker engines differ in what `docker network inspect bridge` reports: newer ones list the IPAM
//! `Gateway`, Debian's 20.10 lists only the `Subnet`. In order, we take the IPAM gateway, else the IPv4
//! address of the bridge's interface (`com.docker.network.bridge.name`, `docker0` by default), else the
//! subnet's first host (where dockerd puts the gateway when none is configured).

use std::net::{IpAddr, Ipv4Addr};
use std::process::Command;

use serde_json::Value;

/// The default bridge's gateway, or why it could not be found.
pub fn bridge_gateway() -> Result<IpAddr, String> {
    let inspect = Command::new("docker")
        .args(["network", "inspect", "bridge", "--format", "{{json .}}"])
        .output()
        .map_err(|error| format!("cannot run `docker network inspect bridge`: {error}"))?;
    if !inspect.status.success() {
        return Err(format!(
            "`docker network inspect bridge` failed: {}",
            String::from_utf8_lossy(&inspect.stderr).trim()
        ));
    }
    let network: Value = serde_json::from_slice(&inspect.stdout)
        .map_err(|error| format!("`docker network inspect bridge` printed no JSON: {error}"))?;
    gateway_from(&network, interface_address)
}

/// The gateway of an inspected network; `interface` looks up an interface's IPv4 address.
pub fn gateway_from(network: &Value, interface: impl Fn(&str) -> Option<Ipv4Addr>) -> Result<IpAddr, String> {
    let configs = network.pointer("/IPAM/Config").and_then(Value::as_array).cloned().unwrap_or_default();
    let ipv4 = |field: &str| {
        configs
            .iter()
            .filter_map(|config| config.get(field)?.as_str())
            .find(|text| !text.contains(':'))
            .map(str::to_owned)
    };
    if let Some(gateway) = ipv4("Gateway").and_then(|text| text.parse::<Ipv4Addr>().ok()) {
        return Ok(gateway.into());
    }
    let name = network.pointer("/Options/com.docker.network.bridge.name").and_then(Value::as_str).unwrap_or("docker0");
    if let Some(address) = interface(name) {
        return Ok(address.into());
    }
    let subnet =
        ipv4("Subnet").ok_or_else(|| format!("the bridge network has no IPv4 gateway or subnet: {network}"))?;
    first_host(&subnet).map(IpAddr::from).ok_or_else(|| format!("cannot read the bridge subnet {subnet:?}"))
}

/// The first host of an IPv4 CIDR subnet (`172.17.0.0/16` → `172.17.0.1`).
pub fn first_host(subnet: &str) -> Option<Ipv4Addr> {
    let (address, prefix) = subnet.split_once('/')?;
    let address: Ipv4Addr = address.parse().ok()?;
    let prefix: u32 = prefix.parse().ok()?;
    if prefix > 30 {
        return None;
    }
    let mask = u32::MAX.checked_shl(32 - prefix).unwrap_or(0);
    Some(Ipv4Addr::from((u32::from(address) & mask) + 1))
}

/// The first IPv4 address of a network interface, from `ip -4 -o addr show <name>`.
fn interface_address(name: &str) -> Option<Ipv4Addr> {
    let output = Command::new("ip").args(["-4", "-o", "addr", "show", "dev", name]).output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    let mut words = text.split_whitespace();
    words.find(|word| *word == "inet")?;
    words.next()?.split('/').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_ipam_gateway_wins() {
        let network = json!({"IPAM": {"Config": [{"Subnet": "fd00::/64", "Gateway": "fd00::1"},
            {"Subnet": "10.9.0.0/16", "Gateway": "10.9.0.254"}]}});
        assert_eq!(gateway_from(&network, |_| None), Ok(IpAddr::from([10, 9, 0, 254])));
    }

    #[test]
    fn without_a_gateway_the_bridge_interface_answers() {
        // Debian's dockerd 20.10 reports the default bridge like this.
        let network = json!({"IPAM": {"Driver": "default", "Options": null, "Config": [{"Subnet": "172.17.0.0/16"}]},
            "Options": {"com.docker.network.bridge.name": "br-test"}});
        let seen = std::cell::RefCell::new(Vec::new());
        let found = gateway_from(&network, |name| {
            seen.borrow_mut().push(name.to_owned());
            Some(Ipv4Addr::new(172, 17, 0, 1))
        });
        assert_eq!(found, Ok(IpAddr::from([172, 17, 0, 1])));
        assert_eq!(seen.into_inner(), ["br-test"]);
    }

    #[test]
    fn without_an_interface_the_subnets_first_host_answers() {
        let network = json!({"IPAM": {"Config": [{"Subnet": "172.18.5.0/24"}]}, "Options": null});
        assert_eq!(gateway_from(&network, |_| None), Ok(IpAddr::from([172, 18, 5, 1])));
        assert_eq!(first_host("10.1.2.3/8"), Some(Ipv4Addr::new(10, 0, 0, 1)));
        assert_eq!(first_host("10.0.0.0/31"), None);
        assert_eq!(first_host("nonsense"), None);
        assert!(gateway_from(&json!({"IPAM": {"Config": []}}), |_| None).is_err());
    }
}
