"""agent-sandbox's Python client (k8s-agent-sandbox), unchanged, in Direct mode against the sandbox
router: SandboxClient.create_sandbox claims a sandbox from a warm pool (a SandboxClaim, with the
caller's kubeconfig), then commands and files go through the router with the caller's bearer
token in extra_headers, over HTTPS with the router's CA (router_tls.py). Prints one JSON line with what each call returned; the test asserts
every field.

argv: namespace, warm pool, claim name, router URL. The bearer token comes in ROUTER_TOKEN (a
process listing shows argv, never the environment); KUBECONFIG names the caller's kubeconfig."""
import base64
import json
import os
import sys

from k8s_agent_sandbox import SandboxClient

from router_tls import direct_config

# every byte value, a NUL and bytes that are not UTF-8: a round trip must keep them all
BLOB = bytes(range(256)) * 64 + b"\x00\xff\xfe end"


def main() -> None:
    namespace, pool, claim, router_url = sys.argv[1:5]
    config = direct_config(router_url, extra_headers={"Authorization": f"Bearer {os.environ['ROUTER_TOKEN']}"})
    client = SandboxClient(connection_config=config)
    sandbox = client.create_sandbox(warmpool=pool, namespace=namespace, claim_name=claim)

    hi = sandbox.commands.run("echo hi")
    sandbox.files.write("data/blob.bin", BLOB)
    back = sandbox.files.read("data/blob.bin")
    listed = sandbox.files.list("data")
    exists = sandbox.files.exists("data/blob.bin")
    missing = sandbox.files.exists("data/missing.bin")
    slow = sandbox.commands.run("sleep 30", command_timeout=1)
    sandbox.close_connection()

    print(json.dumps({
        "sandboxId": sandbox.sandbox_id,
        "echo": {"stdout": hi.stdout, "stderr": hi.stderr, "exitCode": hi.exit_code, "timedOut": hi.timed_out},
        "written": len(BLOB),
        "roundTrip": back == BLOB,
        "readBack": base64.b64encode(back[:16]).decode(),
        "listed": [{"name": e.name, "size": e.size, "type": e.type} for e in listed],
        "exists": exists,
        "missingExists": missing,
        "slow": {"exitCode": slow.exit_code, "timedOut": slow.timed_out},
    }))


if __name__ == "__main__":
    main()
