//! The fabric as JSON: the `fabric` object of the plug-in's `dfsssp-rs-fabric.json` (a
//! `RunRecord`), which records the subnet OpenSM handed to the engine so the same routing can be
//! recomputed offline.
//!
//! [`Fabric`]'s `Deserialize` rebuilds it through [`crate::fabric::FabricBuilder`], so a stored
//! fabric is validated like any other input; errors name the file, the line and the JSON field
//! (`fabric.links[3]`, `fabric.nodes[0].num_ports`, ...).

use serde::de::DeserializeOwned;
use serde::Deserialize;

use super::IoError;
use crate::fabric::Fabric;

/// The part of a run record the offline tools need; every other field is ignored.
#[derive(Deserialize)]
struct FabricOnly {
    fabric: Fabric,
}

/// Reads the fabric of a `dfsssp-rs-fabric.json` (any JSON object with a `fabric` field).
pub fn parse_fabric(text: &str, file: &str) -> Result<Fabric, IoError> {
    parse::<FabricOnly>(text, file).map(|r| r.fabric)
}

/// Deserializes `text`, turning any failure into an [`IoError::Json`] naming the line and the
/// path of the field where it happened.
pub fn parse<T: DeserializeOwned>(text: &str, file: &str) -> Result<T, IoError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let named = |field: String, inner: &serde_json::Error| {
        // serde_json appends " at line L column C"; the line goes in front like every parser's.
        let msg = inner.to_string();
        let why = match msg.rfind(" at line ") {
            Some(i) => msg[..i].to_string(),
            None => msg,
        };
        IoError::Json {
            file: file.to_string(),
            line: inner.line().clamp(1, text.lines().count().max(1)),
            field: if field == "." { String::new() } else { field },
            why,
        }
    };
    let value: T = serde_path_to_error::deserialize(&mut de)
        .map_err(|e| named(e.path().to_string(), e.inner()))?;
    de.end().map_err(|e| named(String::new(), &e))?;
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo;

    fn record(f: &Fabric) -> serde_json::Value {
        serde_json::json!({ "engine": "dfsssp-rs", "lanes": 8, "fabric": f })
    }

    #[test]
    fn round_trip_keeps_the_fabric() {
        let f = topo::by_name("torus:3x3x2,2,lmc=1").unwrap();
        let text = serde_json::to_string_pretty(&record(&f)).unwrap();
        let back = parse_fabric(&text, "run.json").unwrap();
        assert_eq!(back.canonical(), f.canonical());
    }

    /// Each corruption must be refused with the file, a line and the entry named, never a panic
    /// (before, an out-of-range node index panicked and a port one past the end aliased the next
    /// switch's slot).
    #[test]
    fn bad_entries_are_named() {
        let f = topo::by_name("ktree:2,2").unwrap();
        type Corruption = (&'static str, fn(&mut serde_json::Value), &'static str);
        let cases: [Corruption; 6] = [
            (
                "node index",
                |v| v["fabric"]["links"][1]["b"]["node"] = 999.into(),
                "links[1]",
            ),
            (
                "port",
                |v| v["fabric"]["links"][0]["a"]["port"] = 9.into(),
                "links[0]",
            ),
            (
                "lid node",
                |v| v["fabric"]["endpoints"][2]["node"] = 4000.into(),
                "endpoints[2]",
            ),
            (
                "lid twice",
                |v| {
                    let e = v["fabric"]["endpoints"][0].clone();
                    v["fabric"]["endpoints"].as_array_mut().unwrap().push(e);
                },
                "fabric",
            ),
            (
                "type",
                |v| v["fabric"]["nodes"][0]["num_ports"] = "many".into(),
                "fabric.nodes[0].num_ports",
            ),
            (
                "range",
                |v| v["fabric"]["nodes"][1]["num_ports"] = 300.into(),
                "fabric.nodes[1].num_ports",
            ),
        ];
        for (what, corrupt, field) in cases {
            let mut v = record(&f);
            corrupt(&mut v);
            let text = serde_json::to_string_pretty(&v).unwrap();
            let e = parse_fabric(&text, "bad.json").expect_err(what).to_string();
            assert!(e.starts_with("bad.json:"), "{what}: {e}");
            assert!(e.contains(field), "{what}: {e}");
        }
        let e = parse_fabric("{\"fabric\": ", "cut.json").unwrap_err();
        assert_eq!(e.line(), Some(1), "{e}");
    }
}
