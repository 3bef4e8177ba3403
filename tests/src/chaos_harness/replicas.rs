//! Each operator of a chaos run as its Deployment in deploy/ runs it: two replicas with leader election on the
//! operator's Lease, each as the operator's own ServiceAccount of deploy/rbac (a token of it, so its RBAC, its
//! self-grants and its 403s are the real ones), both through one API fault proxy of that operator. A leader kill
//! SIGKILLs the replica holding the Lease and starts a new replica at once, as the Deployment would start a new
//! pod; a replica that exits on its own (a leader that could not renew its Lease in time steps down by exiting) is
//! started again the same way, and counted.

use super::plan::Which;
use crate::api_faults::ApiFaults;
use crate::api_proxy::ApiProxy;
use crate::rbac::{DeployedRbac, token_client};
use crate::{Cluster, OperatorProcess, TestContext, eventually};
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use messages::msg::Journal;
use std::path::PathBuf;
use std::time::Duration;

/// Replicas per operator.
const REPLICAS: usize = 2;
/// Leader election, short enough that a standby takes over within seconds of a leader kill, long enough that a
/// kube-apiserver restart (a few seconds) rarely makes a leader step down.
const LEASE_ARGS: [&str; 7] = [
    "--leader-elect",
    "--leader-elect-lease-duration",
    "8",
    "--leader-elect-renew-deadline",
    "6",
    "--leader-elect-retry-period",
    "2",
];
/// The resync (OLM's `--interval`): the level-triggered safety net for a message the actor faults dropped.
const RESYNC_SECONDS: &str = "20";
/// How long the operators' ServiceAccount tokens are valid (longer than any run).
const TOKEN_SECONDS: i64 = 3600;
/// How long a leader kill waits for a running replica to hold the Lease (one lease duration after an earlier
/// kill, plus the faults).
const LEADER_DEADLINE: Duration = Duration::from_secs(60);

/// One operator: its replicas, its proxy, and what its gone replicas left.
pub struct Operator {
    pub which: Which,
    cluster: &'static Cluster,
    client: kube::Client,
    namespace: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    replicas: Vec<(String, OperatorProcess)>,
    started: usize,
    /// Journals of the replicas killed (read just before each kill).
    gone_journals: Vec<Journal>,
    /// Replicas that exited on their own and were started again (their journals are lost).
    pub exits: u64,
    pub proxy: ApiProxy,
    kubeconfig: PathBuf,
}

impl Operator {
    /// Start `which` watching `watched`, in the first namespace (its Lease, deploy/rbac's account), as that
    /// account, through a proxy making `faults`, with `OLM_RS_CHAOS=chaos` when given.
    pub async fn start(
        ctx: &TestContext,
        which: Which,
        watched: &[String],
        rbac: &DeployedRbac,
        faults: ApiFaults,
        chaos: Option<&str>,
    ) -> anyhow::Result<Self> {
        let binary = which.binary();
        let client = token_client(ctx, rbac, binary, TOKEN_SECONDS).await?;
        let proxy = ApiProxy::start(client, faults).await?;
        let kubeconfig = proxy.write_kubeconfig(&std::env::temp_dir())?;
        let ns = ctx.namespace.clone();
        let mut args = vec![
            "--watched-namespaces".to_string(),
            watched.join(","),
            "--namespace".to_string(),
            ns.clone(),
            "--resync-seconds".to_string(),
            RESYNC_SECONDS.to_string(),
        ];
        args.extend(LEASE_ARGS.iter().map(|a| a.to_string()));
        let mut env = vec![
            ("KUBECONFIG".to_string(), kubeconfig.display().to_string()),
            ("OPERATOR_SERVICE_ACCOUNT".to_string(), rbac.account(binary)),
        ];
        if let Some(text) = chaos {
            env.push((olm_runtime::chaos::ENV.to_string(), text.to_string()));
        }
        let mut op = Operator {
            which,
            cluster: ctx.cluster,
            client: ctx.client.clone(),
            namespace: ns,
            args,
            env,
            replicas: Vec::new(),
            started: 0,
            gone_journals: Vec::new(),
            exits: 0,
            proxy,
            kubeconfig,
        };
        for _ in 0..REPLICAS {
            op.add_replica().await?;
        }
        Ok(op)
    }

    async fn add_replica(&mut self) -> anyhow::Result<()> {
        let identity = format!("{}-{}", self.which.binary(), self.started);
        self.started += 1;
        let mut args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        args.extend(["--leader-elect-identity", identity.as_str()]);
        let env: Vec<(&str, &str)> = self
            .env
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        let process =
            OperatorProcess::start_with_env(self.cluster, self.which.binary(), &args, &env).await?;
        self.replicas.push((identity, process));
        Ok(())
    }

    /// The index of the running replica that holds the Lease, if one does.
    async fn leader(&self) -> anyhow::Result<Option<usize>> {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), &self.namespace);
        let holder = leases
            .get_opt(self.which.binary())
            .await?
            .and_then(|l| l.spec)
            .and_then(|s| s.holder_identity);
        Ok(holder.and_then(|h| self.replicas.iter().position(|(id, _)| *id == h)))
    }

    /// SIGKILL the replica holding the Lease (once a running one does) and start a new replica.
    pub async fn kill_leader(&mut self) -> anyhow::Result<()> {
        let what = format!(
            "a running replica of {} holding its Lease",
            self.which.binary()
        );
        let at = eventually(LEADER_DEADLINE, &what, || self.leader()).await?;
        let (_, mut leader) = self.replicas.remove(at);
        // The leader may be exiting on its own already (it lost its Lease to an API fault): its journal goes with
        // it, as a replica's that exits by itself does; the kill and the new replica still happen.
        match journal_of(&leader).await {
            Ok(journal) => self.gone_journals.push(journal),
            Err(e) => eprintln!(
                "{}: the killed leader's journal was lost: {e:#}",
                self.which.binary()
            ),
        }
        leader.kill();
        self.add_replica().await
    }

    /// Start a new replica for each that exited on its own.
    pub async fn restart_exited(&mut self) -> anyhow::Result<()> {
        let before = self.replicas.len();
        self.replicas.retain_mut(|(_, p)| p.exited().is_none());
        for _ in self.replicas.len()..before {
            self.exits += 1;
            self.add_replica().await?;
        }
        Ok(())
    }

    /// The journals of every replica this operator ran: the killed ones' and the running ones'. A replica that
    /// exited on its own since the last check (a leader that could not renew its Lease) took its journal with it,
    /// as one restarted by [`Self::restart_exited`] does: reported, not an error.
    pub async fn journals(&mut self) -> anyhow::Result<Vec<Journal>> {
        let mut all = self.gone_journals.clone();
        for (_, p) in &mut self.replicas {
            match journal_of(p).await {
                Ok(journal) => all.push(journal),
                Err(e) if p.exited().is_some() => eprintln!(
                    "{}: a replica that exited on its own took its journal with it: {e:#}",
                    self.which.binary()
                ),
                Err(e) => return Err(e),
            }
        }
        Ok(all)
    }

    /// The running replicas (for their logs).
    pub fn processes(&self) -> impl Iterator<Item = &OperatorProcess> {
        self.replicas.iter().map(|(_, p)| p)
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        // The replicas are killed as they drop; the proxy stops as it drops.
        let _ = std::fs::remove_file(&self.kubeconfig);
    }
}

async fn journal_of(op: &OperatorProcess) -> anyhow::Result<Journal> {
    let (code, body) = op.get("/debug/journal").await?;
    anyhow::ensure!(code == 200, "/debug/journal answered {code}");
    Ok(Journal::from_msgpack(&body)?)
}
