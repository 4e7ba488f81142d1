"""Paper reproductions (`mobipath reproduce ...`): one module per paper, each with a `reproduce()`
that runs the experiment and writes a report directory."""
