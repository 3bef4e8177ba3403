//! The chaos harness of `tests/tests/chaos.rs` (the test asserts; this runs): the workload and its end state ([`workload`]), its gRPC catalog
//! ([`grpc_catalog`]), its mid-run changes ([`mid_run`]), what an earlier run's namespaces left ([`leftovers`]), the faults of a seed ([`plan`]), the operators as
//! replicas behind their fault proxies ([`replicas`]), one run ([`run`]) and its row of the table ([`table`]).

pub mod grpc_catalog;
pub mod leftovers;
pub mod mid_run;
pub mod plan;
pub mod replicas;
pub mod run;
pub mod table;
pub mod workload;
