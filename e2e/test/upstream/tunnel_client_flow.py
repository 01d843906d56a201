"""agent-sandbox's Python client (k8s-agent-sandbox), unchanged, without a bearer token: in its
default LocalTunnel mode (`kubectl get svc/sandbox-router-svc`, then `kubectl port-forward
svc/sandbox-router-svc <port>:8080`, then plain HTTP with the routing headers), or in Direct mode
at a URL with no extra_headers, which is what LocalTunnel sends through its tunnel. Prints one
JSON line with what each call returned, or with the router's refusal of the first call; the test
asserts every field.

argv: connection, namespace, claim name, and a warm pool or nothing. The connection is
`tunnel:<router namespace>` or `direct:<URL>`. With a warm pool the client claims from it
(create_sandbox); without one it attaches to the claim the test made (get_sandbox). KUBECONFIG
names the kubeconfig; the tunnel runs the `kubectl` on PATH with it."""
import json
import sys

from k8s_agent_sandbox import SandboxClient
from k8s_agent_sandbox.exceptions import SandboxRequestError
from k8s_agent_sandbox.models import SandboxDirectConnectionConfig, SandboxLocalTunnelConnectionConfig

from router_tls import direct_config

# every byte value, a NUL and bytes that are not UTF-8: a round trip must keep them all
BLOB = bytes(range(256)) * 16 + b"\x00\xff\xfe tunnel"


def connection(spec: str):
    kind, _, value = spec.partition(":")
    if kind == "tunnel":
        return SandboxLocalTunnelConnectionConfig(server_port=8888, router_namespace=value)
    if kind == "direct":
        # the tunnel listener is plain HTTP; the authenticated one HTTPS (router_tls.py)
        return SandboxDirectConnectionConfig(api_url=value) if value.startswith("http://") else direct_config(value)
    raise SystemExit(f"connection must be tunnel:<namespace> or direct:<url>, not {spec!r}")


def refusal(err: SandboxRequestError) -> dict:
    detail = None
    if err.response is not None:
        try:
            detail = err.response.json().get("detail")
        except ValueError:
            detail = err.response.text
    return {"status": err.status_code, "detail": detail}


def main() -> None:
    spec, namespace, claim = sys.argv[1:4]
    pool = sys.argv[4] if len(sys.argv) > 4 else None
    client = SandboxClient(connection_config=connection(spec))
    if pool is not None:
        sandbox = client.create_sandbox(warmpool=pool, namespace=namespace, claim_name=claim)
    else:
        sandbox = client.get_sandbox(claim, namespace=namespace)
    try:
        try:
            hi = sandbox.commands.run("echo hi")
        except SandboxRequestError as err:
            print(json.dumps({"sandboxId": sandbox.sandbox_id, "refused": refusal(err)}))
            return
        sandbox.files.write("tunnel/blob.bin", BLOB)
        back = sandbox.files.read("tunnel/blob.bin")
        exists = sandbox.files.exists("tunnel/blob.bin")
        missing = sandbox.files.exists("tunnel/missing.bin")
    finally:
        # ends the kubectl port-forward of LocalTunnel mode with this process
        sandbox.close_connection()

    print(json.dumps({
        "sandboxId": sandbox.sandbox_id,
        "echo": {"stdout": hi.stdout, "stderr": hi.stderr, "exitCode": hi.exit_code},
        "written": len(BLOB),
        "roundTrip": back == BLOB,
        "exists": exists,
        "missingExists": missing,
    }))


if __name__ == "__main__":
    main()
