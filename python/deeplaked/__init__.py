"""deeplaked: stream tables and queries from a deeplaked server into numpy
and PyTorch, over psycopg 3 and the tensor stream (COPY ... TO STDOUT WITH
(FORMAT tensor, ...)).

    import deeplaked
    db = deeplaked.connect("postgres://127.0.0.1:5433/training")
    loader = (db.dataloader("training_samples").filter("label IS NOT NULL")
              .columns(["embedding", "label"]).batch_size(64).shuffle(True).to_torch())
    for batch in loader:          # dict[str, torch.Tensor]
        ...
"""

from .frame import FrameError, parse_frame
from .loader import DataLoader, copy_sql, stream_frames
from .dataset import Table, TableDataset
from .db import Database, connect

__all__ = ["connect", "Database", "DataLoader", "Table", "TableDataset",
           "FrameError", "parse_frame", "copy_sql", "stream_frames"]
__version__ = "0.1.0"
