"""`aoti-shim scan`: reading an environment, the judgement, the run, the command line."""
