"""hx in Harbor: `-a hx_harbor:HxAgent`, and `-e hx_harbor.host:HostEnvironment` for
running tasks offline on this machine without a container engine."""

from hx_harbor.agent import HxAgent, HxOptions

__all__ = ["HxAgent", "HxOptions"]
