"""Written by notebook 05 (05_collate_and_padding.ipynb), section 3: dict samples and their collate_fn."""

from lesson05_pad_collate import pad_collate
from lesson05_tokens import TokenDataset


class DictTokenDataset(TokenDataset):
    """The same sequences as dict samples: {"input_ids": LongTensor[L_i], "label": int}."""

    def __getitem__(self, index: int) -> dict:
        tokens, label = super().__getitem__(index)
        return {"input_ids": tokens, "label": label}


def pad_dict_collate(batch: list[dict]) -> dict:
    """Pad dict samples into the dict a model takes (Hugging Face's key names)."""
    padded, mask, labels = pad_collate([(s["input_ids"], s["label"]) for s in batch])
    return {"input_ids": padded, "attention_mask": mask, "labels": labels}
