"""`aoti-shim check`: its settings, the run over a process's libraries, the command line."""
