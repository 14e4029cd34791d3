"""How people name a thing when they ask about it later: other words for the generator's subjects.

Someone who heard "the hinge tooling quote" asks a week later about "the pivot tool pricing"; someone who
heard "充电盒运费" asks about "充电仓物流费". A question reworded this way shares few or no words with the
needle's subject, which is where a keyword index alone stops finding it and the meaning has to. Each table
maps a phrase of `needle_vocab.VOCAB` (a part, a document, a cost, a batch, an event, an organisation, a
role...) to what a person might say instead; `reword` swaps every phrase it knows, longest first, in one
pass, so a replacement is never swapped again.
"""

from __future__ import annotations

import re
from functools import cache

_EN = {
    # parts
    "hinge": "pivot", "casing": "housing", "lens": "glass", "battery": "cell", "sensor board": "sensor PCB",
    "camera module": "camera unit", "charging case": "charger case", "nose pad": "nose rest",
    "temple arm": "side arm", "speaker grille": "speaker mesh", "microphone array": "mic cluster",
    "antenna": "aerial", "display driver": "screen driver chip", "frame": "rim", "flex cable": "ribbon cable",
    "USB-C port": "charging port", "thermal pad": "heat pad", "button cap": "button top",
    "packaging insert": "box insert", "charging dock": "charging stand", "main board": "motherboard",
    "screen": "display", "power adapter": "wall plug", "carry pouch": "soft bag", "strap": "lanyard",
    "gasket": "seal", "touch pad": "touch surface", "status light": "indicator LED",
    "vibration motor": "haptic motor", "lens cover": "glass cap",
    # documents (todos)
    "drawings": "CAD files", "test report": "test write-up", "cost sheet": "costing spreadsheet",
    "spec": "specification", "risk list": "list of risks", "checklist": "check sheet", "slides": "deck",
    "tolerance table": "tolerances", "supplier list": "vendor roster", "packing list": "shipping manifest",
    # money
    "tooling quote": "tool pricing", "repair estimate": "fix-up cost", "sample invoice": "samples bill",
    "freight charge": "shipping cost", "certification fee": "approval charge", "design fee": "designer charges",
    "deposit": "down payment", "licence fee": "licensing cost", "test budget": "testing money",
    "packaging cost": "box cost", "rework bill": "redo cost", "insurance premium": "insurance cost",
    # batches
    "pilot order": "trial order", "sample batch": "batch of samples", "spare stock": "spares",
    "first production run": "first mass-production lot", "test batch": "trial lot", "reorder": "repeat order",
    "warehouse stock": "inventory on the shelves", "certification set": "units for approval",
    # events
    "design review": "review of the design", "supplier call": "call with the vendor", "drop test": "fall testing",
    "sign-off meeting": "approval meeting", "customer demo": "demo for the client",
    "workshop": "working session", "retro": "retrospective", "audit": "inspection",
    "walkthrough": "step-through session", "training session": "course",
    # projects (code names)
    "redesign": "new design", "prototype": "early model", "upgrade": "improved version",
    "cost-down effort": "cost reduction work", "variant": "alternative version", "refresh": "facelift",
    # contacts
    "the test lab": "the testing house", "the freight forwarder": "the shipping agent",
    "the law firm": "our lawyers", "the design agency": "the design studio", "the distributor": "the reseller",
    "the recruiting agency": "the headhunters", "the packaging plant": "the box factory",
    "the mould shop": "the tooling shop", "the certification body": "the certifier",
    "contact": "point of contact", "account manager": "account rep", "project lead": "project manager",
    "buyer": "purchaser", "sales rep": "salesperson",
    # quotes and negations
    "schedule": "timeline", "quality problems": "defects", "cost overrun": "going over budget",
    "supplier delay": "late deliveries", "test plan": "testing plan",
    "supplier": "vendor", "coating vendor": "paint shop", "test lab": "testing house",
    "assembler": "assembly partner", "packaging vendor": "box maker",
}

_ZH = {
    # 部件
    "铰链": "合页", "外壳": "壳体", "镜片": "镜头片", "电池": "电芯", "传感器板": "感应板", "摄像头模组": "相机模块",
    "充电盒": "充电仓", "鼻托": "鼻垫", "镜腿": "眼镜腿", "扬声器网罩": "喇叭网", "麦克风阵列": "话筒阵列",
    "天线": "射频天线", "显示驱动": "屏幕驱动", "镜框": "框架", "排线": "柔性线", "USB-C接口": "充电口",
    "散热垫": "导热垫", "按键帽": "按钮帽", "包装内衬": "盒内衬垫", "充电底座": "充电座", "主板": "主电路板",
    "屏幕": "显示屏", "电源适配器": "充电头", "保护套": "保护壳", "挂绳": "吊绳", "密封圈": "防水圈",
    "触控板": "触摸板", "指示灯": "状态灯", "振动马达": "震动电机", "镜片保护盖": "镜头盖",
    # 文档
    "图纸": "设计图", "测试报告": "检测报告", "成本表": "成本清单", "规格书": "规格说明", "风险清单": "风险列表",
    "检查表": "核查清单", "幻灯片": "PPT", "公差表": "公差清单", "供应商名单": "厂商列表", "装箱单": "箱单",
    # 费用
    "模具报价": "开模价格", "维修估价": "修理费用预估", "样品发票": "样品账单", "运费": "物流费",
    "认证费": "认证开销", "设计费": "设计开销", "定金": "预付款", "授权费": "许可费", "测试预算": "测试经费",
    "包装成本": "包材费用", "返工费用": "重工成本", "保险费": "保费",
    # 批次
    "试产订单": "试生产单", "样品批次": "这批样品", "备货": "库存准备", "首批量产": "第一批大货",
    "测试批次": "测试用的那批", "补货订单": "补单", "仓库库存": "库里的存货", "认证样机": "送认证的样机",
    # 活动
    "设计评审": "设计审查会", "供应商电话会": "和厂商的电话", "跌落测试": "摔落测试", "签核会": "审批会",
    "客户演示": "给客户的演示", "研讨会": "讨论会", "复盘会": "回顾会", "审核": "稽核", "走查": "检查会",
    "培训": "培训课",
    # 项目
    "改版": "新版本", "原型": "样机", "升级方案": "升级计划", "降本项目": "成本优化项目", "新款": "新型号",
    "换代": "下一代",
    # 联系人
    "测试实验室": "检测实验室", "货代公司": "物流代理", "律所": "律师事务所", "设计公司": "设计工作室",
    "经销商": "分销商", "猎头公司": "猎头", "包装厂": "包材厂", "模具厂": "开模厂", "认证机构": "认证单位",
    "对接人": "联系人", "客户经理": "客户代表", "项目负责人": "项目经理", "工程师": "技术人员", "采购": "采购员",
    "销售代表": "销售",
    # 引语与否定
    "进度": "时间表", "质量问题": "品质问题", "成本超支": "超预算", "供应商延期": "厂商拖期", "测试计划": "测试安排",
    "供应商": "厂商", "涂层厂": "喷涂厂", "测试机构": "检测机构", "组装厂": "装配厂", "包装商": "包装供应商",
}

REWORDED: dict[str, dict[str, str]] = {"en": _EN, "zh": _ZH}


@cache
def _pattern(lang: str) -> re.Pattern[str]:
    phrases = sorted(REWORDED[lang], key=len, reverse=True)
    body = "|".join(re.escape(p) for p in phrases)
    # English phrases are whole words; Chinese has no word boundaries to keep.
    return re.compile(rf"(?<![\w-])(?:{body})(?![\w-])" if lang == "en" else f"(?:{body})")


def reword(text: str, lang: str) -> str:
    """`text` with every phrase the language's table knows said the other way (unknown text unchanged)."""
    table = REWORDED.get(lang)
    if not table:
        return text
    return _pattern(lang).sub(lambda m: table[m.group(0)], text)
