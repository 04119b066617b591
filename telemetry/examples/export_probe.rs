//! Sends two nested spans to the OTLP endpoint in the environment and flushes. A quick way
//! to check that a collector receives kgmesh's spans:
//!
//! ```text
//! OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 cargo run -p kgmesh-telemetry --example export_probe
//! ```

fn main() {
    let settings = kgmesh_telemetry::Settings::new("kgmesh-probe");
    let mut guard = match kgmesh_telemetry::init(&settings) {
        Ok(guard) => guard,
        Err(error) => {
            eprintln!("export_probe: {error}");
            std::process::exit(2);
        }
    };
    if !guard.is_exporting() {
        eprintln!("export_probe: set OTEL_EXPORTER_OTLP_ENDPOINT");
        std::process::exit(2);
    }
    let trace_id = {
        let outer = tracing::info_span!("probe", kgmesh.probe = true);
        let id = kgmesh_telemetry::trace_id(&outer);
        outer.in_scope(|| tracing::info_span!("probe.child").in_scope(|| {}));
        id
    };
    guard.shutdown();
    println!("{}", trace_id.unwrap_or_default());
}
