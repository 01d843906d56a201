"""How the flows reach the sandbox router over HTTPS with the client's own options: the CA file
in ROUTER_CA becomes SandboxDirectConnectionConfig's ca_cert, and where the URL names the router
Service by its in-cluster DNS name (what its certificate holds), ROUTER_ADDRESS is the address
that name stands for, answered here as cluster DNS would answer a pod. The client is unchanged."""
import os
import socket
from urllib.parse import urlsplit

from k8s_agent_sandbox.models import SandboxDirectConnectionConfig


def _resolve(name: str, address: str) -> None:
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        return real(address if host == name else host, *args, **kwargs)

    socket.getaddrinfo = getaddrinfo


def direct_config(api_url: str, **kwargs) -> SandboxDirectConnectionConfig:
    address = os.environ.get("ROUTER_ADDRESS")
    if address:
        _resolve(urlsplit(api_url).hostname or "", address)
    ca = os.environ.get("ROUTER_CA")
    if ca:
        kwargs["ca_cert"] = ca
    return SandboxDirectConnectionConfig(api_url=api_url, **kwargs)
