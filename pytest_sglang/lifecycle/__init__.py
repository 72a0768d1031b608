"""The lifecycle of one deployment, in the order data flows through it.

1. **spec**: :mod:`.spec` (a host: how to reach it, how SGLang runs there; a leaf),
   :mod:`.hosts` (the inventory that turns a name into one);
2. **lock**: :mod:`.lock` (one session at a time reconfigures a host), :mod:`.lease` (a host
   while the session holds it: lock, deployer, the config up on it, crash recovery);
3. **launch plan**: :mod:`.launch_plan` (a config as this host will start it, computed once),
   :mod:`.production` (production's config with changes), :mod:`.launcher` and
   :mod:`.launcher_cache` (what the host's launcher is: SGLang version, ``--help`` flags, GPUs,
   models), :mod:`.host_resolve` and :mod:`.resolver_program` (the host's own SGLang resolves
   each config before the host changes), :mod:`.dry_run` (the diffs ``--sglang-dry-run``
   shows);
4. **deploy**: :mod:`.deployers` (the registry, name → backend), :mod:`.deployer` (the
   contract), :mod:`.systemd` with :mod:`.unit` (a unit and its drop-in), :mod:`.process` (a
   background process), :mod:`.drain` (let in-flight requests finish first);
5. **follow**: :mod:`.follow` (the server's output as it arrives), :mod:`.journal_tail` (the
   program that reads a unit's journal on the host);
6. **ready**: :mod:`.readiness` (a server that really serves, or the fatal line that says it
   never will), :mod:`.fatal` (the failure classifier: why a start failed, from its lines);
7. **verify**: :mod:`.journal` (the startup journal checked against the plan's expectations),
   :mod:`.deployment` (bring-up from plan to a ready, verified :class:`~.deployment.Deployment`);
   for a topology, :mod:`.topology_deployment` (its replicas on their hosts), :mod:`.router`
   (SGLang's router in front of them) and :mod:`.router_log` (why it failed, from its log);
8. **restore**: :mod:`.backup` (the intent record and the originals, kept on the host until
   it is restored).

Nothing here imports the measurement packages (``bench``, ``baseline``, ``quality``,
``report``); they import it.
"""
