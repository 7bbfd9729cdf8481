"""Layer 6 (beside scaleout and hosting): sequence diagrams drawn from real wire traces, as SVG.

:mod:`~minimcp.diagram.layout` places the messages of a trace; :mod:`~minimcp.diagram.svg` draws
them. Nothing else in the package imports it; skip it on a first reading.
"""
