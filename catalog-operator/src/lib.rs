//! catalog-operator: owns CatalogSources, Subscriptions and InstallPlans.
//!
//! ```text
//! watch CatalogSources ─▶ Registry<CatalogSourceActor> ─▶ CatalogSourceActor (one per catalog)
//! watch Subscriptions  ─▶ Registry<SubscriptionActor>  ─▶ SubscriptionActor (one per subscription)
//! watch InstallPlans   ─▶ Registry<InstallPlanActor>   ─▶ InstallPlanActor (one per plan)
//! shared reads: reflector Stores
//! ```

pub mod catalog_source;
pub mod cli;
pub mod install_plan;
pub mod run;
pub mod shared;
pub mod subscription;
