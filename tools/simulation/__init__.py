"""The kernels' simulated machine (sitecustomize.py: LOADERLAB_SIMULATED_CPUS) and the spawn guard
(spawnguard.py). Not imported by the package: tools/machines.py (`make test-machines`) and the
root conftest.py put this folder on PYTHONPATH, so every Python they start imports
sitecustomize.py at start-up; tests import the modules as tools.simulation.X."""
