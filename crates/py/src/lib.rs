// Python bindings (being written)
