"""Layer 7: sequence diagrams drawn from real wire traces (SVG), for people who would rather look.

:mod:`~minimcp.diagram.layout` places the messages of a trace; :mod:`~minimcp.diagram.svg` draws
them. Nothing else in the package imports it; skip it on a first reading.
"""
