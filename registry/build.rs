//! Compiles `proto/registry.proto` with protox (no `protoc` needed) and generates the tonic
//! server and client; also writes the encoded descriptor set for server reflection.

use prost::Message as _;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto/registry.proto");
    let fds = protox::compile(["proto/registry.proto"], ["proto"])?;
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(out.join("registry_descriptor.bin"), fds.encode_to_vec())?;
    tonic_prost_build::configure().compile_fds(fds)?;
    Ok(())
}
