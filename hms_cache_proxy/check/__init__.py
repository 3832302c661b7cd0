"""The consistency checker (``hms-cache-proxy check``): instances on one PostgreSQL, clients
running random transactional and plain workloads, faults injected meanwhile, every call
recorded and checked afterwards against the invariants of docs/design.md. See docs/consistency.md.
"""
