"""One thread per native thread pool in every DataLoader worker.

torch sets its own pool to one thread in each worker (`_worker_loop`), but NumPy's BLAS and
OpenCV keep one thread per core: num_workers x cores threads compete for the cores. Limit them
in worker_init_fn: threadpoolctl for BLAS and OpenMP, cv2.setNumThreads(0) for OpenCV.
Environment variables (OMP_NUM_THREADS=1) work only when set before the libraries are imported,
and then limit the main process too. Notebook 24.
"""

from threadpoolctl import threadpool_limits


def one_thread_per_worker(worker_id):
    """worker_init_fn: BLAS, OpenMP and OpenCV pools use one thread in this worker."""
    threadpool_limits(limits=1)  # NumPy's BLAS and OpenMP (torch has already set its own to 1)
    try:
        import cv2
    except ImportError:
        return
    cv2.setNumThreads(0)  # OpenCV: run its functions sequentially


if __name__ == "__main__":
    import numpy as np
    from torch.utils.data import DataLoader

    products = DataLoader(range(8), batch_size=2, num_workers=2, worker_init_fn=one_thread_per_worker,
                          collate_fn=lambda ix: float(np.linalg.norm(np.eye(64) @ np.eye(64)) * len(ix)))
    print(list(products))
