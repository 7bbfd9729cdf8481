"""Layer 6: several worker processes behind one load balancer, with Redis as the shared engine.

The bus (:mod:`~minimcp.scaleout.bus`) carries a session's messages to the worker that holds it,
:mod:`~minimcp.scaleout.workers` runs the workers, and :mod:`~minimcp.scaleout._redis` is the
Redis client (the ``redis`` extra). One process never loads any of it; skip it on a first reading.
"""
