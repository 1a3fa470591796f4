"""The PEP 517 backend's implementation; downstream projects name ``aoti_shim.build``.

- :mod:`~aoti_shim.plugin.settings`: the ``[tool.aoti-shim]`` / ``-C aoti-shim.*`` settings, declared once.
- :mod:`~aoti_shim.plugin.prefix`: which prefix is requested, and what CMake really gets.
- :mod:`~aoti_shim.plugin.config_settings`: what scikit-build-core is handed.
- :mod:`~aoti_shim.plugin.wheel`: build privately, check, publish.
- :mod:`~aoti_shim.plugin.gate`: the check of a built wheel.
- :mod:`~aoti_shim.plugin.passthrough`: the hooks that build no binary.
"""
