"""Notebook 24: one thread per native thread pool in every DataLoader worker."""

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
