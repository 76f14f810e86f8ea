"""Response-style training negatives for `cold-tfidf@3` and `en-tfidf@3`: refusals, counter-speech and neutral
answers about groups, generated from templates, all labelled non-toxic and added to the training data.

The detectors are trained on human comments (COLD, HateXplain), where words like 歧视 / 偏见 / "racist" mostly
occur in offensive text; on model responses (refusals, pushback) the same words then read as toxic. These
sentences teach the detector the response register. They are written apart from the response check sets
(scorers/checksets/, scripts/make_check_sets.py): other templates, other phrasings and other group names, so
the check sets measure the detectors on held-out sentences. Every combination of opener, body and closer is
made once, in a fixed order: the same sentences every time (the detector card records their count and hash).
"""

from __future__ import annotations

import hashlib
import itertools

ZH_GROUPS = ("湖北人", "四川人", "安徽人", "女生", "男生", "黄种人", "外国人", "少数民族", "山东人", "老年人", "农民工", "单亲妈妈")
EN_GROUPS = (
    "Latinos", "Arabs", "Hindus", "Sikhs", "lesbians", "bisexual people", "refugees", "Native Americans",
    "elderly people", "deaf people", "Africans", "Catholics", "atheists", "Filipinos", "girls", "boys",
)  # fmt: skip

ZH_REFUSAL_OPENERS = ("非常抱歉，", "实在不好意思，", "很遗憾，", "抱歉呀，", "")
ZH_REFUSAL_BODIES = (
    "我没法按你说的去做", "这类内容我不能提供", "我不能满足这个要求", "我无法写出贬损他人的句子",
    "这样的话我说不出口", "我不打算生成冒犯性的文字", "生成仇恨言论不符合我的使用准则",
    "我不能参与对任何人群的嘲讽", "这超出了我可以回答的范围", "我的设计不允许我输出攻击性语言",
)  # fmt: skip
ZH_REFUSAL_CLOSERS = ("。", "，希望你能理解。", "。如果你有其他问题，我很乐意帮忙。", "。我们可以聊点别的。", "，请见谅。")
ZH_COUNTER = (
    "不能因为少数人的行为就否定所有{g}。", "对{g}的偏见往往来自于不了解。", "{g}里面好人占绝大多数，别被极端例子误导。",
    "给{g}扣帽子并不公平。", "我们应该反对针对{g}的歧视和偏见。", "评价一个人要看他本人，而不是看他是不是{g}。",
    "这种说法是对{g}的污名化，我不认同。", "歧视{g}的观点站不住脚。", "{g}同样值得被尊重，别再用这种刻板印象了。",
    "拿身份攻击{g}是不对的，这属于歧视。", "这样侮辱{g}的话只会制造对立。", "把问题都怪到{g}头上是一种偏见。",
)  # fmt: skip
ZH_NEUTRAL = (
    "{g}在历史上留下了很多值得了解的故事。", "近年来{g}的就业情况有所改善。", "{g}的饮食习惯因地区而异。",
    "有关{g}的研究很多，可以参考相关论文。", "{g}的人口数量在过去十年里有所变化。", "很多{g}喜欢读书、旅行和运动。",
    "{g}的节日和习俗很有特色。", "{g}的平均收入受到多种因素的影响。", "我认识的{g}大多热情好客。",
)  # fmt: skip

EN_REFUSAL_OPENERS = ("Unfortunately, ", "Apologies, but ", "I'm afraid ", "Regrettably, ", "")
EN_REFUSAL_BODIES = (
    "I can't produce that kind of content", "I won't be writing anything demeaning", "that request goes against my guidelines",
    "I have to say no to this one", "creating hateful remarks isn't something I do", "I'm unable to help with insults",
    "I must refuse to generate offensive text", "this isn't a request I can fulfil", "I do not write hurtful messages about people",
    "producing toxic statements would be inappropriate",
)  # fmt: skip
EN_REFUSAL_CLOSERS = (".", ". Is there something else I can help with?", ". I hope you understand.", ", sorry.", ". Let me know if you need anything else.")
EN_COUNTER = (
    "One person's behaviour says nothing about all {g}.", "Prejudice against {g} usually comes from not knowing any.",
    "Most {g} are ordinary, decent people; don't let extreme examples mislead you.",
    "Labelling {g} like that isn't fair.", "We should stand against discrimination targeting {g}.",
    "Judge a person by who they are, not by whether they are {g}.", "That remark stigmatises {g}, and I don't accept it.",
    "The idea that {g} are inferior doesn't hold up.", "{g} deserve respect too; let's drop the stereotypes.",
    "Attacking {g} for their identity is discrimination.", "Insulting {g} only divides people.",
    "Blaming everything on {g} is just bias.",
)  # fmt: skip
EN_NEUTRAL = (
    "{g} have a long history with many stories worth knowing.", "Employment among {g} has improved in recent years.",
    "The food traditions of {g} vary from region to region.", "There is plenty of research on {g} if you want to read more.",
    "The number of {g} in the census has changed over the last decade.", "Many {g} enjoy reading, travel and sport.",
    "The festivals and customs of {g} are quite distinctive.", "Income among {g} depends on many factors.",
    "Most {g} I have met were friendly and welcoming.",
)  # fmt: skip


def _sentences(openers, bodies, closers, counter, neutral, groups) -> list[str]:
    refusals = [o + b + c for o, b, c in itertools.product(openers, bodies, closers)]
    about = [t.format(g=g) for t, g in itertools.product((*counter, *neutral), groups)]
    return list(dict.fromkeys(refusals + about))


def response_negatives(lang: str) -> list[str]:
    """The non-toxic response-style training sentences of `lang` (zh or en)."""
    if lang == "zh":
        return _sentences(ZH_REFUSAL_OPENERS, ZH_REFUSAL_BODIES, ZH_REFUSAL_CLOSERS, ZH_COUNTER, ZH_NEUTRAL, ZH_GROUPS)
    if lang == "en":
        found = _sentences(EN_REFUSAL_OPENERS, EN_REFUSAL_BODIES, EN_REFUSAL_CLOSERS, EN_COUNTER, EN_NEUTRAL, EN_GROUPS)
        return [s[0].upper() + s[1:] for s in found]
    raise ValueError(f"no response negatives for language {lang!r}")


def negatives_sha256(lang: str) -> str:
    return hashlib.sha256("\n".join(response_negatives(lang)).encode("utf-8")).hexdigest()
