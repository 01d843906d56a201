"""The claim flow of the upstream agent-sandbox Python client (k8s-agent-sandbox), unchanged:
create a SandboxClaim, wait for the claim's Ready, wait for the Sandbox's Ready, delete the claim.
Prints one JSON line with what each call returned; the test asserts every field."""
import json
import sys

from k8s_agent_sandbox.k8s_helper import K8sHelper


def main() -> None:
    namespace, claim, pool = sys.argv[1:4]
    helper = K8sHelper()
    created = helper.create_sandbox_claim(claim, pool, namespace, labels={"team": "upstream"})
    sandbox_name = helper.wait_for_claim_ready(
        claim, namespace, 60,
        resource_version=created["metadata"]["resourceVersion"],
        expected_uid=created["metadata"]["uid"],
    )
    # read at once, before any wait: the Sandbox exists the moment its claim is Ready
    got_at_once = helper.get_sandbox(sandbox_name, namespace)
    ip = helper.wait_for_sandbox_ready(sandbox_name, namespace, 60)
    sandbox = helper.get_sandbox(sandbox_name, namespace) or {}
    claim_obj = helper.get_sandbox_claim(claim, namespace) or {}
    listed = helper.list_sandbox_claims(namespace, label_selector="team=upstream")
    helper.delete_sandbox_claim(claim, namespace, expected_uid=created["metadata"]["uid"])
    print(json.dumps({
        "sandboxName": sandbox_name,
        "foundAtOnce": got_at_once is not None,
        "podIP": ip,
        "sandboxReady": [c.get("status") for c in (sandbox.get("status") or {}).get("conditions", []) if c.get("type") == "Ready"],
        "claimStatus": claim_obj.get("status") or {},
        "listedClaims": listed,
    }))


if __name__ == "__main__":
    main()
