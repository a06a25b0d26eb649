"""Written by notebook 05 (05_collate_and_padding.ipynb), section 3: dict samples and their collate_fn."""

from lesson05_pad_collate import pad_collate
from lesson05_tokens import TokenDataset


class DictTokenDataset(TokenDataset):
    """The same sequences as dict samples: {"input_ids": LongTensor[L_i], "label": int}."""

    def __getitem__(self, index: int) -> dict:
        tokens, label = super().__getitem__(index)
        return {"input_ids": tokens, "label": label}


def pad_dict_collate(batch: list[dict]) -> dict:
    """Pad dict samples into the dict a Hugging Face model takes (its key names and mask)."""
    padded, padding_mask, labels = pad_collate([(s["input_ids"], s["label"]) for s in batch])
    attention_mask = (~padding_mask).long()  # Hugging Face's convention: 1 at real tokens
    return {"input_ids": padded, "attention_mask": attention_mask, "labels": labels}
