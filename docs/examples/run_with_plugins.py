"""Run the headless CLI with the example plugins registered.

The CLI (python -m engine) knows only the in-tree plugins.  This wrapper registers
GPUOnly from gpu_only.py first, then hands its arguments to the same CLI, so every flag and
exit code of docs/cli.md applies:

    PYTHONPATH=. python docs/examples/run_with_plugins.py run docs/examples/gpu.yaml --trace -
"""
import sys

import gpu_only                      # found next to this script
from engine.cli import main
from engine.plugins import registry

registry.register(gpu_only.NAME, gpu_only.new)
sys.exit(main(sys.argv[1:]))
